package decode_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
)

func newFake(t *testing.T) (*fixture.Model, *fixture.Backend) {
	t.Helper()
	m := fixture.New()
	return m, m.NewBackend()
}

// argmax returns the most likely next token after prev in the table,
// ties to the lower id.
func argmax(row []float32) int {
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	return best
}

func TestCompleteGreedyFollowsTable(t *testing.T) {
	m, b := newFake(t)
	c, err := decode.Complete(context.Background(), b, "The cat", decode.Options{MaxTokens: 12, TopLogprobs: 3})
	require.NoError(t, err)
	prompt, _ := b.Tokenize("The cat", true)
	prev := prompt[len(prompt)-1]
	var text strings.Builder
	for _, tok := range c.Tokens {
		want := argmax(m.Table[prev])
		if want == fixture.EOS {
			break
		}
		require.Equal(t, want, tok.ID)
		assert.InDelta(t, m.Table[prev][tok.ID], tok.Logprob, 1e-5, "logprob is the table's")
		require.Len(t, tok.TopLogprobs, 3)
		assert.Equal(t, tok.ID, tok.TopLogprobs[0].ID, "greedy token is the best alternative")
		for i := 1; i < 3; i++ {
			assert.GreaterOrEqual(t, tok.TopLogprobs[i-1].Logprob, tok.TopLogprobs[i].Logprob)
		}
		for _, alt := range tok.TopLogprobs {
			assert.InDelta(t, m.Table[prev][alt.ID], alt.Logprob, 1e-5)
			assert.Equal(t, string(b.Vocab().Bytes(alt.ID)), alt.Token)
		}
		text.WriteString(tok.Token)
		prev = tok.ID
	}
	assert.Equal(t, text.String(), c.Text)
	assert.Equal(t, len(prompt), c.PromptTokens)
}

func TestCompleteStopsAtEOG(t *testing.T) {
	m, b := newFake(t)
	// After ".", the table's best next token is </s>.
	require.Equal(t, fixture.EOS, argmax(m.Table[fixture.Raw('.')]))
	c, err := decode.Complete(context.Background(), b, "The cat sat on the mat.", decode.Options{MaxTokens: 50})
	require.NoError(t, err)
	assert.Equal(t, decode.FinishStop, c.FinishReason)
	assert.Empty(t, c.Tokens)
}

func TestCompleteMaxTokens(t *testing.T) {
	_, b := newFake(t)
	c, err := decode.Complete(context.Background(), b, "The", decode.Options{MaxTokens: 3, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 1}})
	require.NoError(t, err)
	if c.FinishReason == decode.FinishLength {
		assert.Len(t, c.Tokens, 3)
	} else {
		assert.LessOrEqual(t, len(c.Tokens), 3)
	}
}

func TestSeedDeterminism(t *testing.T) {
	_, b := newFake(t)
	run := func(seed uint64) string {
		c, err := decode.Complete(context.Background(), b, "Once", decode.Options{MaxTokens: 40, Sampling: decode.SamplingOptions{Temperature: 1.5, Seed: seed}})
		require.NoError(t, err)
		return c.Text
	}
	assert.Equal(t, run(7), run(7), "same seed, same tokens")
	distinct := map[string]bool{}
	for seed := range uint64(8) {
		distinct[run(seed)] = true
	}
	assert.Greater(t, len(distinct), 1, "different seeds give different samples")
}

// script returns a sampler that emits the given pieces in order, then EOS.
func script(t *testing.T, b *fixture.Backend, pieces ...string) decode.Sampler {
	var ids []int
	for _, p := range pieces {
		toks, err := b.Tokenize(p, false)
		require.NoError(t, err)
		require.Len(t, toks, 1, "piece %q is one token", p)
		ids = append(ids, toks[0])
	}
	i := 0
	return decode.SamplerFunc(func([]float32) (int, error) {
		if i == len(ids) {
			return fixture.EOS, nil
		}
		i++
		return ids[i-1], nil
	})
}

func TestStopStringAcrossTokens(t *testing.T) {
	_, b := newFake(t)
	pieces := []string{" the", "in", "er", " a", "on", "x"}
	tests := []struct {
		stop     string
		text     string
		tokens   int // tokens reported
		finished string
	}{
		{"ein", " th", 1, decode.FinishStop},             // starts inside " the", ends inside "in"
		{"in", " the", 1, decode.FinishStop},             // exactly one token
		{"heiner a", " t", 1, decode.FinishStop},         // spans four tokens
		{"nerzz", " theiner aonx", 6, decode.FinishStop}, // a prefix matches, the whole never does (EOS ends it)
		{" aonx", " theiner", 3, decode.FinishStop},      // ends at the last token
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			opts := decode.Options{MaxTokens: 20, Stop: []string{"qq", tt.stop}, Sampler: script(t, b, pieces...)}
			c, err := decode.Complete(context.Background(), b, "The", opts)
			require.NoError(t, err)
			assert.Equal(t, tt.text, c.Text)
			assert.Len(t, c.Tokens, tt.tokens)
			assert.Equal(t, tt.finished, c.FinishReason)
			// Streaming yields the same tokens.
			opts.Sampler = script(t, b, pieces...)
			var streamed []decode.Token
			s := decode.Generate(context.Background(), b, "The", opts)
			for tok := range s.Tokens() {
				streamed = append(streamed, tok)
			}
			require.NoError(t, s.Err())
			assert.Equal(t, c.Tokens, streamed)
			assert.Equal(t, c, s.Completion(), "the stream's completion is Complete's")
		})
	}
}

func TestStreamHoldsBackPossibleStop(t *testing.T) {
	_, b := newFake(t)
	// "er a" might start with "er" (a prefix of the stop "era!"), so "er"
	// must not be yielded before " a" shows it is not the stop string.
	opts := decode.Options{MaxTokens: 20, Stop: []string{"era!"}, Sampler: script(t, b, "in", "er", " a", "on")}
	var seen []string
	s := decode.Generate(context.Background(), b, "The", opts)
	for tok := range s.Tokens() {
		seen = append(seen, tok.Token)
	}
	require.NoError(t, s.Err())
	assert.Equal(t, []string{"in", "er", " a", "on"}, seen)
	assert.Equal(t, decode.FinishStop, s.Completion().FinishReason, "the stream says why it ended")
}

func TestCancellation(t *testing.T) {
	_, b := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	b.BeforeEval = func([]decode.EvalRequest) error {
		calls++
		if calls == 4 {
			cancel()
		}
		return nil
	}
	c, err := decode.Complete(ctx, b, "The", decode.Options{MaxTokens: 100, Sampling: decode.SamplingOptions{Temperature: 1}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, c)
	assert.Equal(t, decode.FinishCancelled, c.FinishReason)
	assert.LessOrEqual(t, len(c.Tokens), 4)

	// The stream ends with the error too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	n := 0
	s := decode.Generate(ctx2, b.Model().NewBackend(), "The", decode.Options{MaxTokens: 100, Sampling: decode.SamplingOptions{Temperature: 1}})
	for range s.Tokens() {
		n++
		if n == 2 {
			cancel2()
		}
	}
	assert.ErrorIs(t, s.Err(), context.Canceled)
	assert.Equal(t, 2, n)
	assert.Equal(t, decode.FinishCancelled, s.Completion().FinishReason)
}

func TestBackendErrorIsWrapped(t *testing.T) {
	_, b := newFake(t)
	boom := errors.New("boom")
	b.BeforeEval = func([]decode.EvalRequest) error { return boom }
	_, err := decode.Complete(context.Background(), b, "The", decode.Options{})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "evaluate")
}

func TestBadOptions(t *testing.T) {
	_, b := newFake(t)
	tests := []struct {
		name   string
		prompt string
		opts   decode.Options
		want   string
	}{
		{"empty prompt", "", decode.Options{}, "empty prompt"},
		{"negative top-logprobs", "a", decode.Options{TopLogprobs: -1}, "TopLogprobs -1"},
		{"top-logprobs beyond vocab", "a", decode.Options{TopLogprobs: 100000}, "vocabulary has only"},
		{"negative max tokens", "a", decode.Options{MaxTokens: -2}, "MaxTokens -2"},
		{"negative temperature", "a", decode.Options{Sampling: decode.SamplingOptions{Temperature: -1}}, "Temperature"},
		{"top-p above one", "a", decode.Options{Sampling: decode.SamplingOptions{TopP: 1.5}}, "TopP"},
		{"empty stop", "a", decode.Options{Stop: []string{""}}, "Stop[0]"},
		{"negative healed bytes", "a", decode.Options{HealedBytes: -1}, "HealedBytes -1"},
		{"healed bytes without a constraint", "a", decode.Options{HealedBytes: 2}, "HealedBytes 2"},
		{"healed bytes past the bound", "a", decode.Options{HealedBytes: 1 << 40, MaxTokens: 1<<63 - 1}, "HealedBytes 1099511627776"},
		{"prompt longer than context", strings.Repeat("x", fixture.ContextLen+5), decode.Options{}, "context holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode.Complete(context.Background(), b, tt.prompt, tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			if tt.prompt != "" && !strings.Contains(tt.name, "context") {
				var oe *decode.OptionError
				assert.ErrorAs(t, err, &oe, "a bad option is an *OptionError")
			}
		})
	}
}

func TestCustomSampler(t *testing.T) {
	m, b := newFake(t)
	// Always the least likely finite token that is not a control token.
	least := decode.SamplerFunc(func(lp []float32) (int, error) {
		best := -1
		for id, x := range lp {
			if id < 2 || math.IsInf(float64(x), -1) {
				continue
			}
			if best < 0 || x < lp[best] {
				best = id
			}
		}
		return best, nil
	})
	c, err := decode.Complete(context.Background(), b, "A", decode.Options{MaxTokens: 5, Sampler: least})
	require.NoError(t, err)
	require.Len(t, c.Tokens, 5)
	prompt, _ := b.Tokenize("A", true)
	prev := prompt[len(prompt)-1]
	for _, tok := range c.Tokens {
		for id := 2; id < len(m.Table[prev]); id++ {
			assert.GreaterOrEqual(t, m.Table[prev][id], m.Table[prev][tok.ID])
		}
		prev = tok.ID
	}
	// A sampler that returns nonsense is an error, not a crash.
	bad := decode.SamplerFunc(func([]float32) (int, error) { return -3, nil })
	_, err = decode.Complete(context.Background(), b, "A", decode.Options{Sampler: bad})
	assert.ErrorContains(t, err, "sampler returned token -3")
	// A sampler's own error ends generation with it.
	refuse := errors.New("nothing I like")
	_, err = decode.Complete(context.Background(), b, "A", decode.Options{Sampler: decode.SamplerFunc(func([]float32) (int, error) { return 0, refuse })})
	assert.ErrorIs(t, err, refuse)
}

func TestCompleteNBranches(t *testing.T) {
	_, b := newFake(t)
	opts := decode.Options{MaxTokens: 20, Sampling: decode.SamplingOptions{Temperature: 1.2, Seed: 10}}
	cs, err := decode.CompleteN(context.Background(), b, "The cat", 4, opts)
	require.NoError(t, err)
	require.Len(t, cs, 4)
	// Branch i equals a single run with seed 10+i.
	for i, c := range cs {
		o := opts
		o.Sampling.Seed = 10 + uint64(i)
		single, err := decode.Complete(context.Background(), b.Model().NewBackend(), "The cat", o)
		require.NoError(t, err)
		assert.Equal(t, single.Text, c.Text, "branch %d", i)
		assert.Equal(t, single.Tokens, c.Tokens, "branch %d", i)
	}
	_, err = decode.CompleteN(context.Background(), b, "The", 99, opts)
	assert.ErrorContains(t, err, "99 branches")
	assert.ErrorIs(t, err, decode.ErrTooManyBranches)
}

// TestStreamOfBadOptions: a stream that cannot start yields nothing and
// says why; its Completion is nil.
func TestStreamOfBadOptions(t *testing.T) {
	_, b := newFake(t)
	s := decode.Generate(context.Background(), b, "", decode.Options{})
	for range s.Tokens() {
		t.Fatal("no token")
	}
	assert.ErrorContains(t, s.Err(), "empty prompt")
	assert.Nil(t, s.Completion())
}
