package decode_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
)

func TestScoreMatchesTable(t *testing.T) {
	m, b := newFake(t)
	text := "The cat sat on the mat in the sun, and then the dog ran over the river to the little bird, which sang."
	res, err := decode.Score(context.Background(), b, text, decode.ScoreOptions{TopLogprobs: 2})
	require.NoError(t, err)
	toks, _ := b.Tokenize(text, true)
	require.Equal(t, []int{fixture.BOS}, res.Unscored, "first token is conditioned on BOS")
	require.Len(t, res.Tokens, len(toks)-1)
	var sum float64
	for i, tok := range res.Tokens {
		assert.Equal(t, toks[i+1], tok.ID)
		assert.InDelta(t, m.Table[toks[i]][toks[i+1]], tok.Logprob, 1e-5)
		assert.Len(t, tok.TopLogprobs, 2)
		sum += tok.Logprob
	}
	assert.InDelta(t, sum, res.Sum, 1e-9)
	assert.InDelta(t, sum/float64(len(res.Tokens)), res.Mean, 1e-9)
	assert.Greater(t, len(res.Tokens), 64, "crosses a scoring window")
}

func TestScoreEqualsGenerateLogprobs(t *testing.T) {
	_, b := newFake(t)
	c, err := decode.Complete(context.Background(), b, "Once upon", decode.Options{MaxTokens: 30, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 3}})
	require.NoError(t, err)
	require.NotEmpty(t, c.Tokens)
	var ids []int
	for _, tok := range c.Tokens {
		ids = append(ids, tok.ID)
	}
	// Score the generated text given the prompt as context.
	res, err := decode.Score(context.Background(), b, c.Text, decode.ScoreOptions{Context: "Once upon"})
	require.NoError(t, err)
	var scored []int
	for _, tok := range res.Tokens {
		scored = append(scored, tok.ID)
	}
	require.Equal(t, ids, scored, "the generated text re-tokenizes to the same tokens")
	for i := range ids {
		assert.InDelta(t, c.Tokens[i].Logprob, res.Tokens[i].Logprob, 1e-6)
	}
	assert.InDelta(t, c.Logprob(), res.Sum, 1e-5)
}

func TestScoreBadInput(t *testing.T) {
	_, b := newFake(t)
	_, err := decode.Score(context.Background(), b, "", decode.ScoreOptions{})
	assert.ErrorContains(t, err, "empty text")
	_, err = decode.Score(context.Background(), b, "x", decode.ScoreOptions{TopLogprobs: -1})
	assert.ErrorContains(t, err, "TopLogprobs -1")
}

// replacingTokenizer reads bytes that are not UTF-8 as U+FFFD, as
// llama.cpp's tokenizers do.
type replacingTokenizer struct{ *fixture.Backend }

func (r replacingTokenizer) Tokenize(text string, addSpecial bool) ([]int, error) {
	return r.Backend.Tokenize(strings.ToValidUTF8(text, "\uFFFD"), addSpecial)
}

// TestScoreSpellsBytesThatAreNotUTF8: a text that is not UTF-8 is scored
// byte for byte, also on a tokenizer that would read U+FFFD in its place,
// with and without a context.
func TestScoreSpellsBytesThatAreNotUTF8(t *testing.T) {
	m, fb := newFake(t)
	b := replacingTokenizer{fb}
	for _, text := range []string{"\xff\xfe\xc3", "The cat\xff sat", "\xe2\x82 the"} {
		for _, prompt := range []string{"", "Once"} {
			res, err := decode.Score(context.Background(), b, text, decode.ScoreOptions{Context: prompt})
			require.NoError(t, err)
			var got []byte
			prev := res.Unscored[len(res.Unscored)-1]
			for _, tok := range res.Tokens {
				got = append(got, fb.Vocab().Bytes(tok.ID)...)
				assert.InDelta(t, m.Table[prev][tok.ID], tok.Logprob, 1e-5)
				prev = tok.ID
			}
			assert.Equal(t, text, string(got), "context %q", prompt)
		}
	}
}

// TestScoreBytesPastTheContext: a text that is not UTF-8 and takes more
// tokens than the context holds is refused once its tokens pass the
// context, before the rest of it is spelled.
func TestScoreBytesPastTheContext(t *testing.T) {
	_, fb := newFake(t)
	b := replacingTokenizer{fb}
	text := strings.Repeat("a\xff b", 100*fb.ContextSize())
	_, err := decode.Score(context.Background(), b, text, decode.ScoreOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the context holds %d", fb.ContextSize()))
	var first int
	_, scanErr := fmt.Sscanf(err.Error(), "the text's first %d bytes", &first)
	require.NoError(t, scanErr, "the error says where spelling stopped: %v", err)
	assert.Less(t, first, len(text)/50, "spelling stops near the context's end")
}
