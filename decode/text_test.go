package decode_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
)

// scripted is a server whose answers a test writes: answer sees every
// request (the prompt, the output so far) and returns whole answers.
type scripted struct {
	caps   decode.Capabilities
	answer func(req decode.TextRequest) *decode.TextResponse
	reqs   []decode.TextRequest
}

func (s *scripted) Capabilities() decode.Capabilities { return s.caps }

func (s *scripted) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	s.reqs = append(s.reqs, req)
	if !utf8.ValidString(req.Prompt + req.Output) {
		return nil, fmt.Errorf("server: a request with invalid UTF-8: %q", req.Output)
	}
	resp := s.answer(req)
	if resp == nil {
		return nil, fmt.Errorf("server: no answer after %q", req.Output)
	}
	var err error
	resp.Tokens, err = req.Deliver(resp.Tokens[:min(len(resp.Tokens), req.MaxTokens)])
	return resp, err
}

func newScripted(answer func(req decode.TextRequest) *decode.TextResponse) *scripted {
	return &scripted{caps: decode.Capabilities{TopLogprobs: 20, Raw: true}, answer: answer}
}

// tk is a token with its alternatives: itself first, then alts, each
// less likely than the one before.
func tk(text string, alts ...string) decode.Token {
	t := decode.Token{ID: -1, Token: text, Bytes: decode.Bytes(text), Logprob: -0.5}
	t.TopLogprobs = append(t.TopLogprobs, decode.TopLogprob{ID: -1, Token: text, Bytes: decode.Bytes(text), Logprob: -0.5})
	for i, a := range alts {
		t.TopLogprobs = append(t.TopLogprobs, decode.TopLogprob{ID: -1, Token: a, Bytes: decode.Bytes(a), Logprob: -1.5 - float64(i)})
	}
	return t
}

func answer(finish string, toks ...decode.Token) *decode.TextResponse {
	return &decode.TextResponse{Tokens: toks, FinishReason: finish}
}

// generate runs one constrained generation on s under the regex re.
func generate(t *testing.T, s decode.TextBackend, re string, opts decode.Options) (*decode.Completion, error) {
	t.Helper()
	c, err := reins.Regex(re)
	require.NoError(t, err)
	opts.TextConstraint = c.TextMatcher
	if opts.MaxTokens == 0 {
		opts.MaxTokens = 40
	}
	out, err := decode.Complete(context.Background(), s, "Once", opts)
	if err == nil {
		require.NoError(t, c.Match([]byte(out.Text)), "the output %q is in the language", out.Text)
	}
	return out, err
}

func texts(toks []decode.Token) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Token
	}
	return out
}

// TestHealShortAlternative: a lone space kept in place of a refused
// word is taken back from the next request, and the server's token that
// begins with it replaces it.
func TestHealShortAlternative(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "":
			return answer(decode.FinishLength, tk(" named"), tk(" Lily", " "))
		case " named":
			return answer(decode.FinishLength, tk(" bob"), tk("."), tk(" It"))
		}
		return nil
	})
	out, err := generate(t, s, ` named [a-z]+\.`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, " named bob.", out.Text)
	assert.Equal(t, []string{" named", " bob", "."}, texts(out.Tokens))
	assert.Equal(t, 1, out.Usage.Healed)
	assert.Equal(t, []string{"", " named"}, []string{s.reqs[0].Output, s.reqs[1].Output})
}

// TestHealFails: when the server will not spell what was taken back, it
// is put back and sent as it is.
func TestHealFails(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "":
			return answer(decode.FinishLength, tk(" named"), tk(" Lily", " "))
		case " named":
			return answer(decode.FinishLength, tk(" Lily", " Tom"))
		case " named ":
			return answer(decode.FinishLength, tk("bob"), tk("."))
		}
		return nil
	})
	out, err := generate(t, s, ` named [a-z]+\.`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, " named bob.", out.Text)
	assert.Equal(t, []string{" named", " ", "bob", "."}, texts(out.Tokens))
	assert.Zero(t, out.Usage.Healed)
	assert.Len(t, s.reqs, 3)
}

// TestSplitCharacterTakenBack: an answer cut inside a character leaves
// it out of the next request, which must spell it again.
func TestSplitCharacterTakenBack(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "":
			// A byte-level server: "é" is two tokens; the answer ends
			// between them.
			return answer(decode.FinishLength, tk(" caf"), tk("\xc3"))
		case " caf":
			return answer(decode.FinishLength, tk("\xc3"), tk("\xa9"), tk("!"))
		}
		return nil
	})
	s.caps.TopLogprobs = 1
	out, err := generate(t, s, ` café!`, decode.Options{TopLogprobs: 0})
	require.NoError(t, err)
	assert.Equal(t, " café!", out.Text)
	assert.Equal(t, 1, out.Usage.Healed)
}

// TestTightBound: where no whole token fits (four letters where two
// are left), the allowed beginning of the likeliest is kept, unscored,
// and the server is asked to spell it again.
func TestTightBound(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "": // asked again to spell "ab", it will not
			return answer(decode.FinishLength, tk("abcd", "wxyz"))
		case "ab":
			return answer(decode.FinishLength, tk("."))
		}
		return nil
	})
	out, err := generate(t, s, `[a-z]{2}\.`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "ab.", out.Text)
	require.Len(t, out.Tokens, 2)
	assert.True(t, out.Tokens[0].Unscored)
	assert.False(t, out.Tokens[0].Forced)
	assert.Equal(t, 1, out.Usage.Cut)
	assert.Equal(t, len(out.Tokens), out.Usage.Kept+out.Usage.Forced+out.Usage.Cut)
}

// TestEndTooEarly: a server that ends where the language needs more has
// its last token replaced by the next allowed alternative (one step
// back), and goes on from there.
func TestEndTooEarly(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "":
			return answer(decode.FinishStop, tk("hello", "hi"))
		case "hi":
			return answer(decode.FinishLength, tk(" there"), tk("."))
		}
		return nil
	})
	out, err := generate(t, s, `[a-z]+ [a-z]+\.`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "hi there.", out.Text)
	assert.Equal(t, 1, out.Usage.Backtracked)
}

// TestForcedPastSpace: where the layout allows spaces, the one byte
// other than a space that may come next is forced.
func TestForcedPastSpace(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "a":
			return answer(decode.FinishLength, tk("x", "y"))
		case "a,":
			return answer(decode.FinishLength, tk("b"))
		case "":
			return answer(decode.FinishLength, tk("a"), tk("x", "y"))
		}
		return nil
	})
	out, err := generate(t, s, `a *, *b`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "a,b", out.Text)
	assert.True(t, out.Tokens[1].Forced)
}

// TestStallSaysWhere: a server whose answers never fit fails after a
// bounded number of round trips, saying where, what it offered and what
// the constraint expected.
func TestStallSaysWhere(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		return answer(decode.FinishLength, tk("#", "%"))
	})
	out, err := generate(t, s, `[a-z]+`, decode.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `at byte 0 it offered "#"`)
	assert.Contains(t, err.Error(), "expected 'a'-'z'")
	assert.LessOrEqual(t, len(s.reqs), 8)
	assert.Empty(t, out.Text)
}

// TestStopLocally: under a constraint the stop strings are reins' to
// find (a server would cut its answer short of what the constraint
// needs); without one the server is asked to stop.
func TestStopLocally(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		return answer(decode.FinishLength, tk(" a"), tk(" b"), tk(" STOP"), tk(" c"))
	})
	out, err := generate(t, s, `( [a-zA-Z]+)+`, decode.Options{Stop: []string{" STOP"}})
	require.NoError(t, err)
	assert.Equal(t, " a b", out.Text)
	assert.Empty(t, s.reqs[0].Stop)

	s.reqs = nil
	out, err = decode.Complete(context.Background(), s, "Once", decode.Options{MaxTokens: 4, Stop: []string{" STOP"}})
	require.NoError(t, err)
	assert.Equal(t, []string{" STOP"}, s.reqs[0].Stop)
	assert.Equal(t, " a b", out.Text)
}

// TestSchemaFirstLine: a JSON Schema's constraint asks a server that
// keeps to schemas for the whole output in one request, with the
// schema; later requests go without it.
func TestSchemaFirstLine(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		if req.Output == "" {
			return answer(decode.FinishStop, tk(`{"`), tk(`n`), tk(`":`), tk(`1`), tk(`}`))
		}
		return nil
	})
	s.caps.JSONSchema = true
	c, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`), nil)
	require.NoError(t, err)
	out, err := decode.Complete(context.Background(), s, "Once", decode.Options{MaxTokens: 50, TextConstraint: c.TextMatcher})
	require.NoError(t, err)
	assert.Equal(t, `{"n":1}`, out.Text)
	require.Len(t, s.reqs, 1)
	assert.JSONEq(t, `{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`, string(s.reqs[0].JSONSchema))
	assert.Equal(t, 50, s.reqs[0].MaxTokens, "the whole budget")
	assert.Equal(t, 5, out.Usage.SchemaTokens)
}

// TestBrokenAnswer: an answer that broke off after some tokens keeps
// them, and the next request goes on from there.
func TestBrokenAnswer(t *testing.T) {
	broke := false
	b := &breaking{scripted: newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch req.Output {
		case "":
			return answer(decode.FinishLength, tk(" a"), tk(" b"), tk(" c"))
		case " a b":
			return answer(decode.FinishLength, tk(" c"), tk("."))
		}
		return nil
	}), broke: &broke}
	out, err := generate(t, b, `( [a-z])+\.`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, " a b c.", out.Text)
	assert.Equal(t, 1, out.Usage.Broken)
}

// breaking passes its scripted's first answer to Watch up to two tokens,
// then breaks off, as a stream reset mid-answer does.
type breaking struct {
	*scripted
	broke *bool
}

func (b *breaking) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	resp, err := b.scripted.Continue(ctx, decode.TextRequest{Prompt: req.Prompt, Output: req.Output, MaxTokens: req.MaxTokens, TopLogprobs: req.TopLogprobs})
	if err != nil || *b.broke {
		if err == nil {
			resp.Tokens, err = req.Deliver(resp.Tokens)
		}
		return resp, err
	}
	*b.broke = true
	part := &decode.TextResponse{}
	for _, t := range resp.Tokens[:2] {
		part.Tokens = append(part.Tokens, t)
		req.Watch(t)
	}
	return part, errors.New("connection reset by peer")
}

// TestDeliver: a backend that receives a whole answer passes its tokens
// to Watch until it says stop, and refuses an answer longer than asked.
func TestDeliver(t *testing.T) {
	var seen []string
	req := decode.TextRequest{MaxTokens: 3, Watch: func(t decode.Token) bool {
		seen = append(seen, t.Token)
		return t.Token != "b"
	}}
	got, err := req.Deliver([]decode.Token{tk("a"), tk("b"), tk("c")})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, texts(got))
	assert.Equal(t, []string{"a", "b"}, seen)
	_, err = req.Deliver([]decode.Token{tk("a"), tk("b"), tk("c"), tk("d")})
	assert.ErrorContains(t, err, "4 tokens, 3 were asked for")
	assert.True(t, strings.HasPrefix(err.Error(), "the server returned"))
}

// TestBanRefused: on a server that takes logit biases and says token
// ids, a position where no top token is allowed is asked again with the
// refused tokens banned, which shows the ones below them.
func TestBanRefused(t *testing.T) {
	// The model's ranking at the first position: ids 1..5 spell these.
	ranked := []string{"#", "%", "&", "x", "y"}
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		if req.Output != "" {
			return answer(decode.FinishStop)
		}
		var top []decode.TopLogprob
		for i, w := range ranked {
			if _, banned := req.Bias[i+1]; banned {
				continue
			}
			top = append(top, decode.TopLogprob{ID: i + 1, Token: w, Bytes: decode.Bytes(w), Logprob: -1 - float64(i)})
		}
		top = top[:min(2, len(top))]
		first := top[0]
		return answer(decode.FinishLength, decode.Token{ID: first.ID, Token: first.Token, Bytes: first.Bytes, Logprob: first.Logprob, TopLogprobs: top})
	})
	s.caps.Bias, s.caps.TopLogprobs = true, 2
	out, err := generate(t, s, `[a-z]`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "x", out.Text)
	assert.Equal(t, 1, out.Usage.Banned)
	require.Len(t, s.reqs, 2)
	assert.Equal(t, map[int]float64{1: -100, 2: -100}, s.reqs[1].Bias)
	assert.Equal(t, 1, s.reqs[1].MaxTokens)
}

// TestEmptyTokensStall: a server whose answers hold only tokens with no
// text (control tokens shown as "") takes an unconstrained output
// nowhere; the loop gives up after a few answers instead of asking
// forever.
func TestEmptyTokensStall(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		return answer(decode.FinishLength, decode.Token{ID: -1, Logprob: -0.1})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // fail, not hang
	defer cancel()
	_, err := decode.Complete(ctx, s, "Once", decode.Options{MaxTokens: 4})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no further than 0 bytes")
	assert.Contains(t, err.Error(), "no text")
	assert.LessOrEqual(t, len(s.reqs), 8)

	// Empty tokens between others are harmless.
	n := 0
	s = newScripted(func(req decode.TextRequest) *decode.TextResponse {
		n++
		if n%2 == 1 {
			return answer(decode.FinishLength, decode.Token{ID: -1, Logprob: -0.1})
		}
		return answer(decode.FinishLength, tk("a"))
	})
	out, err := decode.Complete(context.Background(), s, "Once", decode.Options{MaxTokens: 3})
	require.NoError(t, err)
	assert.Equal(t, "aaa", out.Text)
}

// TestAlternativesChecked: a token whose log-probability disagrees with
// its own entry among the alternatives (the same ID), or an alternative
// listed twice, is the server's error, not a distribution to
// renormalise (it made constrained log-probabilities above 0 and counted
// one token twice). Without IDs, the entry of the token's bytes counts
// with the token's own log-probability; a second entry of the same bytes
// is another token (a byte token beside a piece).
func TestAlternativesChecked(t *testing.T) {
	disagree := tk("a", "b")
	disagree.TopLogprobs[0].Logprob = -5
	byID := disagree
	byID.ID, byID.TopLogprobs = 7, slices.Clone(disagree.TopLogprobs)
	byID.TopLogprobs[0].ID = 7
	twice := tk("a", "a")
	twice.TopLogprobs[1].Logprob = -0.5
	byteAndPiece := tk("a", "a")
	for name, c := range map[string]struct {
		tok  decode.Token
		want string
		lp   float64 // the constrained log-probability, when no error
	}{
		"disagree by ID": {byID, `token "a" has log-probability -0.5, but -5 among its alternatives`, 0},
		"twice":          {twice, `lists the alternative "a" to "a" twice`, 0},
		"disagree":       {disagree, "", -math.Log1p(math.Exp(-1))},                          // a at -0.5, b at -1.5
		"byteAndPiece":   {byteAndPiece, "", -0.5 - math.Log(math.Exp(-0.5)+math.Exp(-1.5))}, // both spell a
	} {
		s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
			return answer(decode.FinishStop, c.tok)
		})
		out, err := generate(t, s, `a|b`, decode.Options{TopLogprobs: 2})
		if c.want == "" {
			require.NoError(t, err, name)
			require.Len(t, out.Tokens, 1, name)
			assert.InDelta(t, c.lp, out.Tokens[0].Constrained.Logprob, 1e-9, name)
			continue
		}
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// TestHalfCharacterDeadEnd: an output left on half a character that no
// answer finishes fails with where it stands and what was expected.
func TestHalfCharacterDeadEnd(t *testing.T) {
	half := tk("Z")
	half.TopLogprobs = append(half.TopLogprobs, decode.TopLogprob{ID: -1, Token: "\xc3", Bytes: decode.Bytes("\xc3"), Logprob: -1})
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		if req.Output == "" {
			return answer(decode.FinishLength, tk("x"), half)
		}
		return answer(decode.FinishLength, tk("Q"))
	})
	_, err := generate(t, s, `x[a-zéè]+y`, decode.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid UTF-8 at byte 1")
	assert.Contains(t, err.Error(), `offered "Q"`)
	assert.Contains(t, err.Error(), `expected \xa8-\xa9`)
}
