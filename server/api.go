package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/jsonkind"
)

// apiError is an error in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// retryAfter, in seconds, for 429 and 503.
	retryAfter int
	// allow, for 405: the methods the path takes.
	allow string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, msg string) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: msg}
	if param != "" {
		e.Param = &param
		e.Message = param + ": " + msg
	}
	return e
}

func withCode(e *apiError, code string) *apiError {
	e.Code = &code
	return e
}

// common holds the fields of both endpoints' requests.
type common struct {
	Model            string          `json:"model"`
	MaxTokens        *int            `json:"max_tokens"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	N                *int            `json:"n"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	Stop             json.RawMessage `json:"stop"`
	Seed             *int64          `json:"seed"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	LogitBias        map[string]any  `json:"logit_bias"`
	User             string          `json:"user"`
	ResponseFormat   *responseFormat `json:"response_format"`
	// reins' own fields.
	TopK    *int     `json:"top_k"`
	MinP    *float64 `json:"min_p"`
	Grammar *string  `json:"grammar"`
	Regex   *string  `json:"regex"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	common
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	common
	Messages            []chatMessage   `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Store               *bool           `json:"store"`
	Metadata            map[string]any  `json:"metadata"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// decodeBody reads a JSON request into v: strict refuses unknown fields.
// Errors name the field where encoding/json says which.
func decodeBody(r *http.Request, maxBytes int64, v any, strict bool, w http.ResponseWriter) *apiError {
	body := &readErrors{r: http.MaxBytesReader(w, r.Body, maxBytes)}
	dec := json.NewDecoder(body)
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil {
		// Only a clean end may follow the value: a body cut short of its
		// Content-Length, larger than the limit or too slow fails here.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == nil {
			return badRequest("", "the body holds more than one JSON value")
		}
		if err == io.EOF {
			return nil
		}
	}
	var tooLarge *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}
	case errors.As(err, &syn):
		return badRequest("", fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, err))
	case errors.As(err, &typ):
		field := strings.TrimPrefix(typ.Field, "common.")
		if field == "" {
			return badRequest("", fmt.Sprintf("the body is a JSON %s: want a JSON object", typ.Value))
		}
		return badRequest(field, fmt.Sprintf("want %s, got JSON %s", jsonkind.Of(typ.Type), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(name, "unknown field (the server is in strict mode)")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "empty or truncated body: want a JSON object")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apiError{Status: http.StatusRequestTimeout, Type: "invalid_request_error",
			Message: "the request body did not arrive within the server's read timeout"}
	}
	if body.err != nil {
		// The transport failed, not the JSON: a broken chunked encoding.
		return badRequest("", "the request body could not be read: "+body.err.Error())
	}
	return badRequest("", "malformed JSON: "+err.Error())
}

// readErrors keeps the first error of r but io.EOF, so that an error
// of the request's transport is not reported as the JSON's.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// stops parses "stop": a string or a list of strings.
func parseStop(raw json.RawMessage, lim Limits) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	var list []string
	if json.Unmarshal(raw, &one) == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "want a string or a list of strings")
	}
	if len(list) > lim.MaxStop {
		return nil, badRequest("stop", fmt.Sprintf("%d stop strings: at most %d", len(list), lim.MaxStop))
	}
	for i, s := range list {
		switch {
		case s == "":
			return nil, badRequest(fmt.Sprintf("stop[%d]", i), "empty stop string")
		case len(s) > lim.MaxStopBytes:
			return nil, badRequest(fmt.Sprintf("stop[%d]", i), fmt.Sprintf("longer than %d bytes", lim.MaxStopBytes))
		}
	}
	return list, nil
}

// sampling checks the sampling fields and returns decode's options.
// OpenAI's defaults: temperature 1, top_p 1; a missing seed is drawn at
// random.
func (c *common) sampling(seed func() uint64) (decode.SamplingOptions, *apiError) {
	o := decode.SamplingOptions{Temperature: 1}
	if c.Temperature != nil {
		t := *c.Temperature
		if math.IsNaN(t) || t < 0 || t > 2 {
			return o, badRequest("temperature", fmt.Sprintf("%v: want 0 to 2", t))
		}
		o.Temperature = t
	}
	if c.TopP != nil {
		p := *c.TopP
		if math.IsNaN(p) || p < 0 || p > 1 {
			return o, badRequest("top_p", fmt.Sprintf("%v: want 0 to 1", p))
		}
		if p < 1 {
			o.TopP = p
		}
	}
	if c.TopK != nil {
		if *c.TopK < 0 {
			return o, badRequest("top_k", fmt.Sprintf("%d: want 0 (off) or more", *c.TopK))
		}
		o.TopK = *c.TopK
	}
	if c.MinP != nil {
		p := *c.MinP
		if math.IsNaN(p) || p < 0 || p > 1 {
			return o, badRequest("min_p", fmt.Sprintf("%v: want 0 to 1", p))
		}
		o.MinP = p
	}
	if c.Seed != nil {
		o.Seed = uint64(*c.Seed)
	} else {
		o.Seed = seed()
	}
	for _, pen := range []struct {
		name string
		v    *float64
	}{{"presence_penalty", c.PresencePenalty}, {"frequency_penalty", c.FrequencyPenalty}} {
		if pen.v != nil && *pen.v != 0 {
			return o, badRequest(pen.name, "not supported (reins reports the model's own distribution): leave it out or 0")
		}
	}
	if len(c.LogitBias) > 0 {
		return o, badRequest("logit_bias", "not supported: use grammar, regex or response_format to constrain the output")
	}
	if err := o.Validate(); err != nil {
		return o, badRequest("", err.Error())
	}
	return o, nil
}

// counts checks n and max_tokens against the limits.
func (c *common) counts(maxTokens *int, maxTokensName string, lim Limits) (n, max int, apiErr *apiError) {
	n = 1
	if c.N != nil {
		n = *c.N
		if n < 1 || n > lim.MaxN {
			return 0, 0, badRequest("n", fmt.Sprintf("%d: want 1 to %d", n, lim.MaxN))
		}
	}
	max = lim.DefaultMaxTokens
	if maxTokens != nil {
		max = *maxTokens
		if max < 0 || max > lim.MaxTokens {
			return 0, 0, badRequest(maxTokensName, fmt.Sprintf("%d: want 0 to %d", max, lim.MaxTokens))
		}
	}
	return n, max, nil
}

// chatContent returns a message's content as text: a string, or a list
// of text parts.
func chatContent(raw json.RawMessage, i int) (string, *apiError) {
	param := fmt.Sprintf("messages[%d].content", i)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "want a string or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("%s[%d].type", param, j), fmt.Sprintf("%q: only text parts are supported", p.Type))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// prompts parses a completion request's prompt: a string or a list of
// strings. Token arrays are refused: the server tokenizes text itself.
func parsePrompts(raw json.RawMessage, lim Limits) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "missing: give the text to continue")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, checkPrompt("prompt", one, lim)
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("prompt", "want a string or a list of strings (token arrays are not supported: send text)")
	}
	if len(list) == 0 || len(list) > lim.MaxPrompts {
		return nil, badRequest("prompt", fmt.Sprintf("%d prompts: want 1 to %d", len(list), lim.MaxPrompts))
	}
	for i, p := range list {
		if err := checkPrompt(fmt.Sprintf("prompt[%d]", i), p, lim); err != nil {
			return nil, err
		}
	}
	return list, nil
}

func checkPrompt(param, p string, lim Limits) *apiError {
	switch {
	case p == "":
		return badRequest(param, "empty prompt")
	case len(p) > lim.MaxPromptBytes:
		return badRequest(param, fmt.Sprintf("%d bytes: at most %d", len(p), lim.MaxPromptBytes))
	}
	return nil
}
