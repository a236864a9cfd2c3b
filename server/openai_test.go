package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reins-go/reins"
)

// TestOpenAIClient drives the server with OpenAI's own Go client,
// unchanged but for its base URL and key: chat and completions, streamed
// and not, logprobs, a strict JSON schema, reins' regex field (sent as
// an extra field), echo, and an error.
func TestOpenAIClient(t *testing.T) {
	_, ts, _ := newTest(t, Config{APIKey: "test-key", ModelName: "builtin"})
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	ctx := context.Background()

	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "builtin" {
		t.Fatalf("models: %+v %v", models, err)
	}

	// Chat with logprobs: the same numbers as the library's.
	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       "builtin",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("The cat")},
		MaxTokens:   openai.Int(6),
		Temperature: openai.Float(0),
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := chat.Choices[0]
	want, err := reins.Builtin().Generate(ctx, "System: Be brief.\nUser: The cat\nAssistant: ", reins.Options{MaxTokens: 6, TopLogprobs: 3, Stop: []string{"\nUser:", "\nSystem:"}})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Message.Content != want.Text || len(ch.Logprobs.Content) != len(want.Tokens) {
		t.Fatalf("chat %q (%d logprobs), want %q (%d)", ch.Message.Content, len(ch.Logprobs.Content), want.Text, len(want.Tokens))
	}
	for i, lp := range ch.Logprobs.Content {
		if math.Abs(lp.Logprob-want.Tokens[i].Logprob) > 1e-6 || len(lp.TopLogprobs) != 3 || lp.Token != want.Tokens[i].Token {
			t.Errorf("token %d: %q %v with %d alternatives, want %q %v", i, lp.Token, lp.Logprob, len(lp.TopLogprobs), want.Tokens[i].Token, want.Tokens[i].Logprob)
		}
	}
	if chat.Usage.CompletionTokens != int64(len(want.Tokens)) || chat.Usage.PromptTokens == 0 {
		t.Errorf("usage %+v", chat.Usage)
	}

	// A strict JSON schema, streamed: the pieces join to valid JSON.
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "n": map[string]any{"type": "integer", "minimum": 0, "maximum": 50}},
		"required": []string{"ok", "n"}, "additionalProperties": false}
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "builtin",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Answer in JSON.")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Strict: openai.Bool(true), Schema: schema}}},
		Seed:          openai.Int(7),
		Logprobs:      openai.Bool(true),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	var v struct {
		OK *bool `json:"ok"`
		N  *int  `json:"n"`
	}
	got := acc.Choices[0].Message.Content
	if err := json.Unmarshal([]byte(got), &v); err != nil || v.OK == nil || v.N == nil || *v.N > 50 {
		t.Fatalf("streamed %q: %v", got, err)
	}
	if acc.Usage.CompletionTokens == 0 {
		t.Errorf("no usage in the stream: %+v", acc.Usage)
	}

	// reins' regex field, sent as an extra field of the request; the
	// constrained logprob comes back as an extra field of each entry.
	re, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "builtin",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("yes or no?")},
		Logprobs: openai.Bool(true),
	}, option.WithJSONSet("regex", "(yes|no)\\."))
	if err != nil {
		t.Fatal(err)
	}
	if c := re.Choices[0].Message.Content; c != "yes." && c != "no." {
		t.Errorf("regex reply %q", c)
	}
	if raw := re.Choices[0].Logprobs.Content[0].JSON.ExtraFields["constrained"].Raw(); !strings.Contains(raw, `"logprob"`) {
		t.Errorf("no constrained logprob in %s", re.Choices[0].Logprobs.Content[0].RawJSON())
	}

	// Completions with echo: the prompt's own logprobs.
	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "builtin",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("The cat sat")},
		MaxTokens: openai.Int(0),
		Echo:      openai.Bool(true),
		Logprobs:  openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	score, err := reins.Builtin().Score(ctx, "The cat sat", reins.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lp := comp.Choices[0].Logprobs; len(lp.TokenLogprobs) != len(score.Tokens) || math.Abs(lp.TokenLogprobs[0]-score.Tokens[0].Logprob) > 1e-6 {
		t.Errorf("echo logprobs %v, want those of %+v", lp.TokenLogprobs, score.Tokens)
	}

	// Streamed completions.
	cs := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: "builtin", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")},
		MaxTokens: openai.Int(8), Temperature: openai.Float(0),
	})
	var text strings.Builder
	for cs.Next() {
		if c := cs.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Text)
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	if w, _ := reins.Builtin().Generate(ctx, "Once upon", reins.Options{MaxTokens: 8}); text.String() != w.Text {
		t.Errorf("streamed %q, want %q", text.String(), w.Text)
	}

	// An error the client reports with the field.
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "builtin", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(1000),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "top_logprobs" {
		t.Errorf("top_logprobs 1000: %v", err)
	}
}
