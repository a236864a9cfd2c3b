package reins

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/logspace"
)

// textModel serves the fixture model as a server with topK alternatives.
func textModel(topK int) (*Model, *fixture.TextBackend) {
	tb := &fixture.TextBackend{B: fixture.New().NewBackend(), TopK: topK}
	return New(lockedText{tb: tb}), tb
}

// lockedText serialises calls to the fixture server, which is not safe
// for concurrent use (a real server is).
type lockedText struct {
	mu *sync.Mutex
	tb *fixture.TextBackend
}

func (l lockedText) Capabilities() decode.Capabilities { return l.tb.Capabilities() }
func (l lockedText) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	if l.mu != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	return l.tb.Continue(ctx, req)
}

// TestTextBackendUnconstrained: free text from a server is what the
// model gives locally, in one request.
func TestTextBackendUnconstrained(t *testing.T) {
	remote, _ := textModel(5)
	local := Builtin()
	for seed := range uint64(4) {
		opts := Options{MaxTokens: 20, Temperature: 1, Seed: seed, TopLogprobs: 3}
		want, err := local.Generate(context.Background(), "The cat", opts)
		require.NoError(t, err)
		got, err := remote.Generate(context.Background(), "The cat", opts)
		require.NoError(t, err)
		assert.Equal(t, want.Text, got.Text)
		assert.Equal(t, 1, got.Usage.Requests)
	}
}

// textCases are constraints of every front end that a bigram model of
// English can follow through its top 20 alternatives (and what they
// force).
func textCases(t *testing.T) map[string]*Constraint {
	re, err := Regex(` ?(the|a|then) [a-z ]{3,80}\.`)
	require.NoError(t, err)
	g, err := Grammar(`root ::= " "? ("the" | "then" | "a") " " word (" " word)* "."
word ::= [a-z]+`)
	require.NoError(t, err)
	schema, err := JSONSchema([]byte(`{"type": "object", "properties": {"story": {"type": "string", "pattern": "^[a-z ]{3,30}$"}}, "required": ["story"], "additionalProperties": false}`), nil)
	require.NoError(t, err)
	return map[string]*Constraint{"regex": re, "gbnf": g, "schema": schema}
}

// TestTextBackendConstrained: under every front end, outputs from a
// server are in the language, every kept token's logprob is the one the
// server returned, and requests are far fewer than tokens.
func TestTextBackendConstrained(t *testing.T) {
	remote, _ := textModel(20)
	for name, c := range textCases(t) {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(5) {
				out, err := remote.Generate(context.Background(), "The cat sat on the mat and", Options{Constraint: c, MaxTokens: 200, Temperature: 1, Seed: seed})
				require.NoError(t, err, "seed %d", seed)
				require.NoError(t, c.Match([]byte(out.Text)))
				for _, tok := range out.Tokens {
					if tok.Unscored {
						continue // forced, or the allowed beginning of a refused token
					}
					require.NotNil(t, tok.Constrained)
					assert.True(t, tok.Constrained.TopK)
					assert.LessOrEqual(t, tok.Constrained.Logprob, 1e-9)
					assert.GreaterOrEqual(t, tok.Constrained.Logprob, tok.Logprob-1e-9, "renormalising never lowers a probability")
				}
				u := out.Usage
				assert.Equal(t, len(out.Tokens), u.Kept+u.Forced+u.Cut)
				assert.Less(t, u.Requests, len(out.Tokens), "fewer requests than tokens: %+v", u)
			}
		})
	}
}

// TestTextBackendGreedyAgreesWithLocal: greedy constrained output over a
// server equals the local one where the constrained choice is among the
// server's alternatives (here, 20 of 265 tokens).
func TestTextBackendGreedyAgreesWithLocal(t *testing.T) {
	remote, _ := textModel(20)
	local := Builtin()
	for _, src := range []string{` ?(the|a|then) [a-z ]{3,12}\.`, ` (the|a) (cat|dog|bird|river)`, `[a-z ]{1,20}`} {
		re, err := Regex(src)
		require.NoError(t, err)
		want, err := local.Generate(context.Background(), "The dog ran to the river and", Options{Constraint: re, MaxTokens: 60})
		require.NoError(t, err)
		got, err := remote.Generate(context.Background(), "The dog ran to the river and", Options{Constraint: re, MaxTokens: 60})
		require.NoError(t, err)
		assert.Equal(t, want.Text, got.Text, src)
	}
}

// TestTextBackendFaults: a server that lies gives an error, never an
// output outside the language.
func TestTextBackendFaults(t *testing.T) {
	re, err := Regex(`[a-z ]{10,20}\.`)
	require.NoError(t, err)
	for name, fault := range map[string]func(*decode.TextResponse){
		"token and bytes differ": func(r *decode.TextResponse) { r.Tokens[0].Token = "zzz" },
		"more tokens than asked": func(r *decode.TextResponse) { r.Tokens = append(r.Tokens, make([]decode.Token, 300)...) },
		"positive logprob":       func(r *decode.TextResponse) { r.Tokens[0].Logprob = 3 },
	} {
		m, tb := textModel(5)
		tb.AfterContinue = func(r *decode.TextResponse) {
			if len(r.Tokens) > 0 {
				fault(r)
			}
		}
		_, err := m.Generate(context.Background(), "The", Options{Constraint: re, Temperature: 1})
		assert.Error(t, err, name)
	}
	m, tb := textModel(5)
	boom := errors.New("503")
	tb.BeforeContinue = func(decode.TextRequest) error { return boom }
	_, err = m.Generate(context.Background(), "The", Options{Constraint: re})
	assert.ErrorIs(t, err, boom)

	// A server whose answers never fit, with nothing forced, fails with
	// where and why.
	m, tb = textModel(0)
	tb.AfterContinue = func(r *decode.TextResponse) {
		for i := range r.Tokens {
			r.Tokens[i] = decode.Token{ID: -1, Token: "#", Bytes: decode.Bytes("#"), Logprob: -1}
		}
	}
	_, err = m.Generate(context.Background(), "The", Options{Constraint: re, Temperature: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "expected")
}

// TestTextBackendChoose: options scored through a server's alternatives
// come with their probabilities and say so.
func TestTextBackendChoose(t *testing.T) {
	remote, _ := textModel(20)
	sel, err := remote.Choose(context.Background(), "The dog ran", []string{" the river", " then", " tree"}, ChooseOptions{})
	require.NoError(t, err)
	exact, err := Builtin().Choose(context.Background(), "The dog ran", []string{" the river", " then", " tree"}, ChooseOptions{})
	require.NoError(t, err)
	assert.Equal(t, exact.Choice, sel.Choice)
	sum := 0.0
	for i, o := range sel.Options {
		assert.True(t, o.TopK)
		sum += o.Prob
		if !o.Bound {
			assert.InDelta(t, exact.Options[i].Logprob, o.Logprob, 1e-4, "%q followed its own tokens", o.Text)
		}
	}
	assert.InDelta(t, 1, sum, 1e-9)
	_, err = remote.Score(context.Background(), "x", ScoreOptions{})
	assert.ErrorIs(t, err, decode.ErrCannotScore)
}

// TestTextBackendStreaming: a server that streams is asked for the whole
// budget and left at the first refused token, so it generates hardly
// more tokens than the output keeps.
func TestTextBackendStreaming(t *testing.T) {
	tb := &fixture.TextBackend{B: fixture.New().NewBackend(), TopK: 20, Stream: true}
	remote := New(lockedText{tb: tb})
	for name, c := range textCases(t) {
		for seed := range uint64(3) {
			out, err := remote.Generate(context.Background(), "The cat sat on the mat and", Options{Constraint: c, MaxTokens: 200, Temperature: 1, Seed: seed})
			require.NoError(t, err, "%s seed %d", name, seed)
			require.NoError(t, c.Match([]byte(out.Text)))
			u := out.Usage
			assert.LessOrEqual(t, u.Generated, u.Kept+u.Refused+u.Requests, "%s: %+v", name, *u)
			assert.Less(t, u.Requests, len(out.Tokens))
		}
	}
}

// TestTextBackendConstrainedLogprobs: on a server each kept token's
// constrained logprob is its logprob renormalised over the allowed
// tokens among the server's alternatives (marked TopK), and Unseen is
// the probability the alternatives leave out, the bound on what the
// renormalisation could not see. The regex [a-z]+ allows exactly the
// alternatives spelled with lowercase letters only.
func TestTextBackendConstrainedLogprobs(t *testing.T) {
	const topK = 5
	m, _ := textModel(topK)
	re, err := Regex(`[a-z]+`)
	require.NoError(t, err)
	lower := func(b []byte) bool {
		for _, c := range b {
			if c < 'a' || c > 'z' {
				return false
			}
		}
		return len(b) > 0
	}
	checked := 0
	for seed := range uint64(4) {
		out, err := m.Generate(context.Background(), "The cat", Options{Constraint: re, MaxTokens: 12, Temperature: 1, Seed: seed, TopLogprobs: topK})
		require.NoError(t, err)
		for i, tok := range out.Tokens {
			if tok.Forced || tok.Unscored {
				continue
			}
			c := tok.Constrained
			require.NotNil(t, c, "token %d", i)
			assert.True(t, c.TopK, "token %d", i)
			require.Len(t, tok.TopLogprobs, topK, "token %d", i)
			// z: the log of the allowed alternatives' mass.
			z := math.Inf(-1)
			mass, inTop := 0.0, false
			var allowed []decode.TopLogprob
			for _, a := range tok.TopLogprobs {
				mass += math.Exp(a.Logprob)
				inTop = inTop || string(a.Bytes) == string(tok.Bytes)
				if lower(a.Bytes) {
					z = logspace.Add(z, a.Logprob)
					allowed = append(allowed, a)
				}
			}
			if !inTop { // the token came from a request that took it another way (a bias, a stall): it counts too
				z = logspace.Add(z, tok.Logprob)
				mass += math.Exp(tok.Logprob)
			}
			assert.InDelta(t, tok.Logprob-z, c.Logprob, 1e-9, "token %d %q", i, tok.Token)
			assert.InDelta(t, max(0, 1-mass), c.Unseen, 1e-9, "token %d", i)
			require.Len(t, c.TopLogprobs, len(allowed), "token %d: the constrained alternatives are the allowed ones", i)
			for k, a := range c.TopLogprobs {
				assert.Equal(t, string(allowed[k].Bytes), string(a.Bytes), "token %d alternative %d", i, k)
				assert.InDelta(t, allowed[k].Logprob-z, a.Logprob, 1e-9, "token %d alternative %d", i, k)
			}
			checked++
		}
	}
	assert.Greater(t, checked, 10)
}
