package decode_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/logspace"
)

// word is a token with no alternatives, alt an alternative, and one an
// answer of one token, itself first among its alternatives.
func word(text string, lp float64) decode.Token {
	return decode.Token{ID: -1, Token: text, Bytes: decode.Bytes(text), Logprob: lp}
}

func alt(text string, lp float64) decode.TopLogprob {
	return decode.TopLogprob{ID: -1, Token: text, Bytes: decode.Bytes(text), Logprob: lp}
}

func one(text string, lp float64, alts ...decode.TopLogprob) *decode.TextResponse {
	tok := word(text, lp)
	tok.TopLogprobs = append([]decode.TopLogprob{alt(text, lp)}, alts...)
	return answer(decode.FinishLength, tok)
}

// scoring is a scripted server that also scores a given text (echo):
// each text's tokens and their log-probabilities come from scores.
type scoring struct {
	*scripted
	scores map[string][]decode.Token
	asked  []string
}

func (s *scoring) ScorePrompt(ctx context.Context, prompt, text string, topN int) (*decode.ScoreResult, error) {
	s.asked = append(s.asked, text)
	res := &decode.ScoreResult{Tokens: s.scores[text]}
	for _, t := range res.Tokens {
		res.Sum += t.Logprob
	}
	return res, nil
}

// TestFiniteRestIsScored: where the rest of the language is a few short
// texts (a choice at the output's end) and none of the server's
// alternatives begins one, a server that scores given texts is asked to
// score each, and the most probable ends the output (at temperature 0);
// its first token reports its probability among them. Without echo the
// loop stalls as before.
func TestFiniteRestIsScored(t *testing.T) {
	scores := map[string][]decode.Token{
		"zebra":  {word("zeb", -3), word("ra", -2)},
		"quokka": {word("qu", -1), word("okka", -1)},
		"walrus": {word("wal", -4), word("rus", -5)},
	}
	server := func(echo bool) *scoring {
		s := &scoring{scripted: newScripted(func(req decode.TextRequest) *decode.TextResponse {
			return answer(decode.FinishLength, tk(" the", " a", " an"))
		}), scores: scores}
		s.caps.Echo = echo
		return s
	}
	s := server(true)
	out, err := generate(t, s, ` (zebra|quokka|walrus)`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, " quokka", out.Text)
	assert.ElementsMatch(t, []string{"zebra", "quokka", "walrus"}, s.asked, "each way on, after the forced space")
	require.Len(t, out.Tokens, 3)
	assert.True(t, out.Tokens[0].Unscored, "the space, forced")
	z := logspace.Add(logspace.Add(-5, -2), -9)
	assert.InDelta(t, -2-z, out.Tokens[1].Constrained.Logprob, 1e-12, "the text's probability among the texts")
	assert.True(t, out.Tokens[2].Forced)
	assert.Equal(t, -1.0, out.Tokens[2].Logprob, "the server's own log-probability")
	assert.Equal(t, 3, out.Usage.Scored)

	// Sampled at a temperature, every text comes up, and only those.
	seen := map[string]bool{}
	for seed := range uint64(40) {
		out, err := generate(t, server(true), ` (zebra|quokka|walrus)`, decode.Options{Sampling: decode.SamplingOptions{Temperature: 3, Seed: seed}})
		require.NoError(t, err)
		seen[out.Text] = true
	}
	assert.Len(t, seen, 3, "%v", seen)

	// Not when the rest is more than a few texts.
	_, err = generate(t, server(true), ` [0-9]+`, decode.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "took the output no further")

	// Without echo, each text is followed through the server's
	// alternatives, one request per token: the server's first answers
	// hold none of the texts, but asked for one token after " " its
	// alternatives spell each.
	follow := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch {
		case req.MaxTokens == 1 && req.Output == " ":
			return one("the", -0.1, alt("zeb", -3), alt("wal", -4), alt("qu", -5))
		case req.MaxTokens == 1 && req.Output == " zeb":
			return one("ra", -0.5)
		case req.MaxTokens == 1 && req.Output == " wal":
			return one("rus", -0.5)
		case req.MaxTokens == 1 && req.Output == " qu":
			return one("ick", -0.2, alt("okka", -6)) // quokka's end is past its alternatives but one
		}
		return answer(decode.FinishLength, tk(" the", " a", " an"))
	})
	out, err = generate(t, follow, ` (zebra|quokka|walrus)`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, " zebra", out.Text, "zebra: -3.5; walrus: -4.5; quokka: -11")
	require.Len(t, out.Tokens, 3)
	c := out.Tokens[1].Constrained
	require.NotNil(t, c)
	assert.True(t, c.TopK, "followed through alternatives: an approximation")
	assert.InDelta(t, -3.5-logspace.Add(logspace.Add(-3.5, -4.5), -11), c.Logprob, 1e-12)
	assert.Equal(t, 3, out.Usage.Scored)
}

// TestFiniteWordsMidOutput: where the way on is one of a few words (an
// enum value inside a longer output) that none of the server's
// alternatives begins, the words are scored through the alternatives,
// the likeliest is appended, and generation goes on after it.
func TestFiniteWordsMidOutput(t *testing.T) {
	s := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch {
		case req.MaxTokens == 1 && req.Output == "":
			return one("x", -0.1, alt("do", -1), alt("ca", -2), alt("bi", -3))
		case req.MaxTokens == 1 && req.Output == "do":
			return one("g", -0.5)
		case req.MaxTokens == 1 && req.Output == "ca":
			return one("t", -0.5)
		case req.MaxTokens == 1 && req.Output == "bi":
			return one("rd", -0.5)
		case req.Output == "dog, ":
			return answer(decode.FinishStop, tk("7"))
		}
		return answer(decode.FinishLength, tk("x", "y"))
	})
	out, err := generate(t, s, `(cat|dog|bird), [0-9]`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "dog, 7", out.Text)
	assert.Equal(t, 3, out.Usage.Scored)
	require.NotEmpty(t, out.Tokens)
	assert.Equal(t, "do", out.Tokens[0].Token)
	assert.InDelta(t, -1.5-logspace.Add(logspace.Add(-1.5, -2.5), -3.5), out.Tokens[0].Constrained.Logprob, 1e-12)
}

// TestFiniteEdges: a stop string inside the chosen text cuts the
// output and its tokens at the same place; a word chosen mid-output
// keeps its score (healing the next boundary does not take it back);
// where an output that ends inside a character cannot be mended
// otherwise, its pieces are taken back and the ways on from before it
// are scored (the server's tokens here cut every character, so the scores
// tie), never a request with invalid UTF-8.
func TestFiniteEdges(t *testing.T) {
	spell := func(toks []decode.Token) string {
		var b []byte
		for _, tok := range toks {
			b = append(b, tok.Bytes...)
		}
		return string(b)
	}
	refuse := func(req decode.TextRequest) *decode.TextResponse {
		return answer(decode.FinishLength, tk(" the", " a", " an"))
	}
	s := &scoring{scripted: newScripted(refuse), scores: map[string][]decode.Token{
		"zebra":  {word("zeb", -3), word("ra", -2)},
		"quokka": {word("qu", -1), word("okka", -1)},
		"walrus": {word("wal", -4), word("rus", -5)},
	}}
	s.caps.Echo = true
	c, err := reins.Regex(` (zebra|quokka|walrus)`)
	require.NoError(t, err)
	out, err := decode.Complete(context.Background(), s, "Once", decode.Options{TextConstraint: c.TextMatcher, MaxTokens: 40, Stop: []string{"q"}})
	require.NoError(t, err)
	assert.Equal(t, " ", out.Text)
	assert.Equal(t, out.Text, spell(out.Tokens), "the tokens end where the text does")

	s = &scoring{scripted: newScripted(func(req decode.TextRequest) *decode.TextResponse {
		if req.Output == "dog, " {
			return answer(decode.FinishStop, tk("7"))
		}
		return answer(decode.FinishLength, tk("x", "y"))
	}), scores: map[string][]decode.Token{"dog": {word("dog", -1)}, "cat": {word("cat", -2)}, "bird": {word("bird", -3)}}}
	s.caps.Echo = true
	out, err = generate(t, s, `(cat|dog|bird), [0-9]`, decode.Options{})
	require.NoError(t, err)
	assert.Equal(t, "dog, 7", out.Text)
	require.NotEmpty(t, out.Tokens)
	assert.Equal(t, "dog", out.Tokens[0].Token)
	assert.InDelta(t, -1-logspace.Add(logspace.Add(-1, -2), -3), out.Tokens[0].Constrained.Logprob, 1e-12, "the choice keeps its probability")

	p := newScripted(func(req decode.TextRequest) *decode.TextResponse {
		switch {
		case req.Output == "":
			return answer(decode.FinishLength, tk("\xc3"), tk("zz", "qq"))
		}
		return answer(decode.FinishLength, tk("zz", "qq"))
	})
	out, err = generate(t, p, `(éat|èat|éeel)`, decode.Options{})
	require.NoError(t, err, "the cut character is taken back and the ways on scored, not sent as invalid UTF-8")
	assert.Equal(t, 3, out.Usage.Scored)
	assert.Contains(t, []string{"éat", "èat", "éeel"}, out.Text)
}
