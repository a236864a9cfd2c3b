package reins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/earley"
)

// textMatcher judges a server's output on bytes with the constraint's
// parser: a server returns text, and there is no vocabulary to mask with.
// It implements decode.TextConstraint (and decode.SchemaConstraint, for
// a JSON Schema's constraint).
type textMatcher struct {
	p      *earley.Parser
	schema json.RawMessage
}

func (c *Constraint) textMatcher() decode.TextConstraint {
	return &textMatcher{p: earley.NewParser(c.prog), schema: serverSchema(c.schema)}
}

// TextMatcher returns a fresh matcher of the constraint on bytes, as
// generation on a server (a decode.TextBackend) uses: for a loop of
// one's own over a server's answers. It is not safe for concurrent use.
func (c *Constraint) TextMatcher() decode.TextConstraint { return c.textMatcher() }

// serverSchema returns a JSON Schema fit to send to a server: one that
// refers to no other document (a server could not load it), else nil.
func serverSchema(schema []byte) json.RawMessage {
	if len(schema) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(schema, &v); err != nil || !selfContained(v) {
		return nil
	}
	return json.RawMessage(schema)
}

// selfContained reports whether a decoded schema's $refs all point
// inside it.
func selfContained(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" && !strings.HasPrefix(s, "#") {
				return false
			}
			if !selfContained(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !selfContained(x) {
				return false
			}
		}
	}
	return true
}

func (t *textMatcher) Accept(text []byte) bool {
	at := t.p.Len()
	for _, b := range text {
		if !t.p.Push(b) {
			t.p.Truncate(at)
			return false
		}
	}
	return true
}

func (t *textMatcher) Mark() int                   { return t.p.Len() }
func (t *textMatcher) Undo(mark int)               { t.p.Truncate(mark) }
func (t *textMatcher) CanEnd() bool                { return t.p.CanEnd() }
func (t *textMatcher) Expected() string            { return t.p.Expected() }
func (t *textMatcher) JSONSchema() json.RawMessage { return t.schema }

// Commit lets the parser compact the steps before mark, which Undo will
// no longer return to.
func (t *textMatcher) Commit(mark int) {
	if mark > t.p.Base() && mark <= t.p.Len() {
		t.p.CommitTo(mark)
	}
}

// Forced returns the bytes that are the only way on.
func (t *textMatcher) Forced() []byte { return t.p.Forced() }

// scoreOptionsTopK scores options on a server that cannot score a given
// text: each option is followed through the server's top alternatives,
// one request per position (options that share a prefix share them),
// taking at each position the alternative that spells the longest
// prefix of what is left. An option that leaves the alternatives gets
// the bound log(unseen mass) for the rest, and says so.
func (m *Model) scoreOptionsTopK(ctx context.Context, prompt string, options []string, then string) ([]Option, error) {
	caps := m.text.Capabilities()
	if caps.TopLogprobs < 1 {
		return nil, errors.New("reins: the server returns no alternatives: options cannot be scored")
	}
	asked := map[string]*decode.TextResponse{}
	out := make([]Option, len(options))
	for i, o := range options {
		f, err := decode.FollowTopK(ctx, m.text, prompt, "", o+then, caps.TopLogprobs, asked)
		if err != nil {
			return nil, err
		}
		out[i] = Option{Text: o, TopK: true, Logprob: f.Logprob, Bound: f.Bound, Tokens: f.Tokens}
	}
	return out, nil
}
