//go:build cgo

// The tests against a real Ollama server, built from the module reins
// depends on (see internal/ollamatest). They build with cgo only, so
// that CI's cgo-less pass (which also builds llama.cpp's Go module
// without it) does not run them twice.

package ollama_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/backends/ollama"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/extract"
	"github.com/reins-go/reins/internal/shared"
)

// seeds is how many seeds each constraint runs; REINS_SWEEP=1 widens it.
func seeds() uint64 {
	if shared.Sweep() {
		return 24
	}
	return 4
}

// recorder keeps every token and alternative a server returned, to
// check that kept tokens report the server's own numbers.
type recorder struct {
	decode.TextBackend
	mu   sync.Mutex
	seen map[string][]float64
	n    int
}

func (r *recorder) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	resp, err := r.TextBackend.Continue(ctx, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if resp != nil {
		if r.seen == nil {
			r.seen = map[string][]float64{}
		}
		for _, t := range resp.Tokens {
			r.seen[string(t.Bytes)] = append(r.seen[string(t.Bytes)], t.Logprob)
			for _, a := range t.TopLogprobs {
				r.seen[string(a.Bytes)] = append(r.seen[string(a.Bytes)], a.Logprob)
			}
		}
	}
	return resp, err
}

// returned reports whether the server returned token text with this
// log-probability.
func (r *recorder) returned(text string, lp float64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.seen[text] {
		if x == lp {
			return true
		}
	}
	return false
}

func storiesBackend(t *testing.T, opts ollama.Options) *ollama.Backend {
	srv := stories(t)
	opts.Model, opts.URLs = storiesModel, []string{srv.URL}
	b, err := ollama.New(opts)
	require.NoError(t, err)
	return b
}

// realCases are constraints of every front end with prompts that
// stories260K can follow, through its top 20 tokens, what the
// constraints force, and (for JSON) the server's own format.
type realCase struct {
	name, prompt string
	c            *reins.Constraint
}

func realCases(t *testing.T) []realCase {
	re, err := reins.Regex(`, there (was|lived) a (little|big|happy) [a-z]+( [a-z]+){0,6}\.`)
	require.NoError(t, err)
	g, err := reins.Grammar(`root ::= " " name " " verb " " rest "."
name ::= "Lily" | "Tom" | "Ben" | "Sue"
verb ::= "was" | "had" | "saw" | "wanted"
rest ::= [a-z]+ (" " [a-z]+){0,8}`)
	require.NoError(t, err)
	// Ollama's format lays JSON out with spaces and newlines (llama.cpp's
	// schema grammar allows up to 22 between tokens): a constraint that
	// allows them takes the server's answer whole.
	sc, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}, "age": {"type": "integer", "minimum": 1, "maximum": 12}}, "required": ["name", "age"], "additionalProperties": false}`), &reins.JSONOptions{Whitespace: 24})
	require.NoError(t, err)
	return []realCase{
		{"regex", "Once upon a time", re},
		{"gbnf", "Once upon a time, there was a little girl named Lily. She loved to play outside. One day,", g},
		{"schema", "Lily was five years old. ", sc},
	}
}

// TestRealConstrained: under a GBNF grammar, a regex and a JSON Schema,
// the real server's outputs are in the language for every seed, every
// kept token reports the log-probability the server returned, and
// requests are far fewer than tokens.
func TestRealConstrained(t *testing.T) {
	rec := &recorder{TextBackend: storiesBackend(t, ollama.Options{})}
	m := reins.New(rec)
	for _, tc := range realCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var requests, tokens int
			for seed := range seeds() {
				out, err := m.Generate(context.Background(), tc.prompt, reins.Options{Constraint: tc.c, MaxTokens: 80, Temperature: 0.8, Seed: seed})
				require.NoError(t, err, "seed %d", seed)
				require.NoError(t, tc.c.Match([]byte(out.Text)), "seed %d: %q", seed, out.Text)
				for _, tok := range out.Tokens {
					if tok.Unscored {
						continue
					}
					assert.True(t, rec.returned(tok.Token, tok.Logprob), "seed %d: token %q with logprob %v was not among the server's", seed, tok.Token, tok.Logprob)
					require.NotNil(t, tok.Constrained)
					assert.True(t, tok.Constrained.TopK)
				}
				u := out.Usage
				assert.Equal(t, len(out.Tokens), u.Kept+u.Forced+u.Cut)
				requests += u.Requests
				tokens += len(out.Tokens)
				t.Logf("seed %d: %q: %d requests, %d tokens (%+v)", seed, out.Text, u.Requests, len(out.Tokens), *u)
			}
			assert.Less(t, 2*requests, tokens, "requests are far fewer than tokens")
		})
	}
}

// TestRealGreedyMatchesLocal: greedy constrained output over the server
// equals llama.cpp's in process on the same GGUF where the model agrees
// with the grammar (its top token, when allowed, is kept; when not, the
// likeliest allowed one is among its top 20).
func TestRealGreedyMatchesLocal(t *testing.T) {
	remote := reins.New(storiesBackend(t, ollama.Options{}))
	lm, err := llama.Load(shared.Path(t, "models/stories260K.gguf"), llama.Options{Threads: 1, Sequences: 1})
	require.NoError(t, err)
	local := reins.New(lm)
	defer local.Close()
	for _, c := range []struct{ prompt, re string }{
		{"Once upon a time", `, there was a [a-z]+ [a-z]+ named [A-Z][a-z]+\.`},
		{"Once upon a time", `[a-zA-Z ,.]{1,80}`},
		{"Lily and Tom went to the park. They", `( [a-z]+){3,12}\.`},
		// The model's top token is refused here ("little"): the likeliest
		// allowed one is among its top 20, as llama.cpp's mask finds it.
		{"Once upon a time", `, there was a (big|happy|sad) [a-z]+ named [A-Z][a-z]+\.`},
		{"Once upon a time, there was a little girl named Lily. She", ` (was|had) [a-z]+( [a-z]+){1,6}\.`},
	} {
		re, err := reins.Regex(c.re)
		require.NoError(t, err)
		want, err := local.Generate(context.Background(), c.prompt, reins.Options{Constraint: re, MaxTokens: 40})
		require.NoError(t, err)
		got, err := remote.Generate(context.Background(), c.prompt, reins.Options{Constraint: re, MaxTokens: 40})
		require.NoError(t, err)
		assert.Equal(t, want.Text, got.Text, c.re)
		t.Logf("%q: %d requests for %d tokens", got.Text, got.Usage.Requests, len(got.Tokens))
	}
}

// TestRealBigramLogprobs: the fixture model served by Ollama gives the
// bigram table's log-probabilities, which reins reports unchanged: free
// greedy text and every logprob equal the built-in model's in Go.
func TestRealBigramLogprobs(t *testing.T) {
	srv := server(t)
	b, err := ollama.New(ollama.Options{Model: bigramModel, URLs: []string{srv.URL}})
	require.NoError(t, err)
	remote := reins.New(b)
	local := reins.Builtin()
	for _, prompt := range []string{"The cat", "Once upon a time there"} {
		opts := reins.Options{MaxTokens: 12, TopLogprobs: 5}
		want, err := local.Generate(context.Background(), prompt, opts)
		require.NoError(t, err)
		got, err := remote.Generate(context.Background(), prompt, opts)
		require.NoError(t, err)
		require.Equal(t, want.Text, got.Text)
		assert.Equal(t, 1, got.Usage.Requests)
		for i, tok := range got.Tokens {
			assert.InDelta(t, want.Tokens[i].Logprob, tok.Logprob, 1e-4, "token %d %q", i, tok.Token)
			// Alternatives that hold part of a character are left out
			// (Ollama's JSON cannot carry their bytes); the rest agree.
			assert.LessOrEqual(t, len(tok.TopLogprobs), 5)
			for _, a := range tok.TopLogprobs {
				found := false
				for _, w := range want.Tokens[i].TopLogprobs {
					if w.Token == a.Token {
						found = true
						assert.InDelta(t, w.Logprob, a.Logprob, 1e-4, "alternative %q", a.Token)
					}
				}
				assert.True(t, found, "alternative %q", a.Token)
			}
		}
	}
}

// TestRealChoose: options followed through the server's alternatives
// come out as the local model's exact scores where they stay among them.
func TestRealChoose(t *testing.T) {
	remote := reins.New(storiesBackend(t, ollama.Options{}))
	lm, err := llama.Load(shared.Path(t, "models/stories260K.gguf"), llama.Options{Threads: 1, Sequences: 1})
	require.NoError(t, err)
	local := reins.New(lm)
	defer local.Close()
	opts := []string{" happy", " sad", " tired"}
	want, err := local.Choose(context.Background(), "Lily was very", opts, reins.ChooseOptions{})
	require.NoError(t, err)
	got, err := remote.Choose(context.Background(), "Lily was very", opts, reins.ChooseOptions{})
	require.NoError(t, err)
	assert.Equal(t, want.Choice, got.Choice)
	for i, o := range got.Options {
		assert.True(t, o.TopK)
		if !o.Bound {
			assert.InDelta(t, want.Options[i].Logprob, o.Logprob, 1e-3, "%q", o.Text)
		}
	}
	_, err = remote.Score(context.Background(), "The cat", reins.ScoreOptions{})
	assert.ErrorIs(t, err, decode.ErrCannotScore)
}

// TestRealChat: /api/chat continues the output as an assistant message.
func TestRealChat(t *testing.T) {
	m := reins.New(storiesBackend(t, ollama.Options{Chat: true}))
	re, err := reins.Regex(` ?[A-Z][a-z]*( [a-z]+){2,10}[.!]`)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Tell me a story.", reins.Options{Constraint: re, MaxTokens: 60, Temperature: 0.5, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, re.Match([]byte(out.Text)))
	assert.False(t, strings.Contains(out.Text, "\n"))
	assert.False(t, math.IsNaN(out.Logprob()))
}

// TestRealExtract: extraction works on the real server as on a local
// model: the server lays its format's JSON out with whitespace, which
// the extractor's constraint allows on a server (reins.ServerWhitespace),
// and every document gives a value valid against the schema, with a
// confidence for every field.
func TestRealExtract(t *testing.T) {
	m := reins.New(storiesBackend(t, ollama.Options{}))
	schema := filepath.Join("..", "..", "testdata", "extract", "person.schema.json")
	x, err := extract.NewFile(m, schema, nil)
	require.NoError(t, err)
	check, err := reins.JSONSchemaFile(schema, &reins.JSONOptions{Whitespace: reins.ServerWhitespace, Unbounded: true})
	require.NoError(t, err)
	docs, err := extract.ReadInputs([]string{filepath.Join("..", "..", "testdata", "extract", "docs")}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	for _, d := range docs {
		res, err := x.Extract(context.Background(), d.Text)
		require.NoError(t, err, d.ID)
		require.NoError(t, check.Match(res.Value), "%s: %s", d.ID, res.Value)
		for p, c := range res.Confidence() {
			assert.True(t, c >= 0 && c <= 1, "%s %s: confidence %v", d.ID, p, c)
		}
		assert.Contains(t, res.Confidence(), "/kind")
		// A listed value is the most probable of its alternatives, and
		// the value holds it, also where the server wrote another.
		var v map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(res.Value, &v))
		for _, f := range res.Fields {
			if len(f.Alternatives) == 0 {
				continue
			}
			best := f.Alternatives[0]
			for _, a := range f.Alternatives {
				if a.Prob > best.Prob {
					best = a
				}
			}
			assert.JSONEq(t, string(best.Value), string(f.Value), "%s %s", d.ID, f.Pointer)
			assert.JSONEq(t, string(f.Value), string(v[strings.TrimPrefix(f.Pointer, "/")]), "%s %s", d.ID, f.Pointer)
		}
	}
}

// TestRealFiniteRest: where the output can only end as one of a few
// words that none of the server's alternatives begins (stories260K
// writes no Spanish, Greek or Russian), each word is followed through
// the alternatives and scored, and the likeliest ends the output
// (Ollama cannot score a given text).
func TestRealFiniteRest(t *testing.T) {
	m := reins.New(storiesBackend(t, ollama.Options{}))
	// The second set's words all begin with the byte 0xC3, which the
	// constraint forces: the output then ends inside a character, and
	// the words are scored from before it.
	for _, words := range []string{` (ñandú|ωmega|жук)`, ` (ñandú|über|émile)`} {
		re, err := reins.Regex(words)
		require.NoError(t, err)
		out, err := m.Generate(context.Background(), "Once upon a time, there was a", reins.Options{Constraint: re, MaxTokens: 20})
		require.NoError(t, err, words)
		require.NoError(t, re.Match([]byte(out.Text)), "%q", out.Text)
		t.Logf("%q usage %+v", out.Text, out.Usage)
		require.NotNil(t, out.Usage)
		assert.Equal(t, 3, out.Usage.Scored, "%s: each word scored", words)
	}
}

// TestRealSchemaWithoutFormat: JSON under a schema from a server not
// asked to keep to it (NoFormat), on a model that never writes a JSON
// key by itself: the keys and the enum values, none of them among the
// server's alternatives, are scored as the few words that may come
// next, and the output is valid.
func TestRealSchemaWithoutFormat(t *testing.T) {
	m := reins.New(storiesBackend(t, ollama.Options{NoFormat: true}))
	sc, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"pet": {"enum": ["cat", "dog", "bird"]}, "happy": {"type": "boolean"}}, "required": ["pet", "happy"], "additionalProperties": false}`), nil)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), "Lily had a pet. JSON: ", reins.Options{Constraint: sc, MaxTokens: 40})
	require.NoError(t, err)
	require.NoError(t, sc.Match([]byte(out.Text)), "%q", out.Text)
	t.Logf("%s usage %+v", out.Text, out.Usage)
	assert.Positive(t, out.Usage.Scored)
}
