package decode

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Context, when set, is a prompt that conditions the text and is not
	// scored itself. It is tokenized on its own, with the model's special
	// tokens (BOS); the text is then tokenized without them.
	Context string
	// TopLogprobs is how many alternatives to report per token.
	TopLogprobs int
}

// ScoreResult is the log-probability of every token of a text.
type ScoreResult struct {
	// Tokens are the scored tokens in order, each with its
	// log-probability given everything before it.
	Tokens []Token `json:"tokens"`
	// Unscored are the tokens before the first scored one: BOS, the
	// context's tokens, or, for a model without BOS and no context, the
	// text's first token, which nothing conditions.
	Unscored []int   `json:"unscored"`
	Sum      float64 `json:"sum"`  // Σ log-probability of Tokens
	Mean     float64 `json:"mean"` // Sum / len(Tokens)
}

// scoreWindow is how many positions Score evaluates per backend call.
const scoreWindow = 64

// Score returns the log-probability of every token of text under the
// model: "The cat sat" → [-2.4, -2.1, -0.3]. The first token is
// conditioned on BOS when the model uses one.
func Score(ctx context.Context, b Backend, text string, opts ScoreOptions) (*ScoreResult, error) {
	if text == "" {
		return nil, errors.New("empty text: nothing to score")
	}
	var all []int
	nUnscored := 1
	if opts.Context != "" {
		pre, err := b.Tokenize(opts.Context, true)
		if err != nil {
			return nil, fmt.Errorf("tokenize context: %w", err)
		}
		rest, err := b.Tokenize(text, false)
		if err != nil {
			return nil, fmt.Errorf("tokenize text: %w", err)
		}
		all, nUnscored = append(pre, rest...), len(pre)
	} else {
		var err error
		if all, err = b.Tokenize(text, true); err != nil {
			return nil, fmt.Errorf("tokenize text: %w", err)
		}
	}
	return ScoreTokens(ctx, b, all[:nUnscored], all[nUnscored:], opts.TopLogprobs)
}

// ScoreTokens returns the log-probability of every token of tokens given
// the tokens before it, starting from prefix (which must not be empty:
// at least BOS, or a prompt). Use it to score exact token sequences,
// such as a generation's own tokens: re-tokenizing text is not always
// faithful (llama.cpp replaces invalid UTF-8 with U+FFFD, for one).
// topN is how many alternatives to report per token.
func ScoreTokens(ctx context.Context, b Backend, prefix, tokens []int, topN int) (*ScoreResult, error) {
	v := b.Vocab()
	switch {
	case len(prefix) == 0:
		return nil, errors.New("score: no prefix to condition the first token on (give BOS or a prompt)")
	case len(tokens) == 0:
		return nil, errors.New("score: no tokens to score")
	case topN < 0 || topN > v.Len():
		return nil, fmt.Errorf("top-logprobs %d: want a count in [0, %d]", topN, v.Len())
	}
	all := append(append(make([]int, 0, len(prefix)+len(tokens)), prefix...), tokens...)
	nUnscored := len(prefix)
	for i, t := range all {
		if t < 0 || t >= v.Len() {
			return nil, fmt.Errorf("score: token %d at position %d is outside the vocabulary of %d", t, i, v.Len())
		}
	}
	if len(all) > b.ContextSize() {
		return nil, fmt.Errorf("text is %d tokens, the context holds %d", len(all), b.ContextSize())
	}
	res := &ScoreResult{Unscored: all[:nUnscored:nUnscored]}
	nl := b.NumLogits()
	logits := make([]float32, scoreWindow*nl)
	lp := make([]float32, nl)
	var top []int
	// Row r of a window starting at position s predicts all[s+r+1].
	for start := nUnscored - 1; start < len(all)-1; start += scoreWindow {
		end := min(start+scoreWindow, len(all)-1)
		want := end - start
		req := []EvalRequest{{Seq: 0, Tokens: all[:end], Want: want, Logits: logits[:want*nl]}}
		if err := b.Eval(ctx, req); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		for r := range want {
			if math.IsNaN(LogSoftmax(lp, logits[r*nl:(r+1)*nl])) {
				return nil, fmt.Errorf("the model returned no finite logits at position %d", start+r)
			}
			id := all[start+r+1]
			tb := v.Bytes(id)
			top = TopN(top[:0], lp[:v.Len()], topN)
			t := Token{ID: id, Token: string(tb), Bytes: Bytes(tb), Logprob: float64(lp[id]), TopLogprobs: topLogprobs(v, lp, top)}
			res.Tokens = append(res.Tokens, t)
			res.Sum += t.Logprob
		}
	}
	res.Mean = res.Sum / float64(len(res.Tokens))
	return res, nil
}
