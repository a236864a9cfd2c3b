package decode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/reins-go/reins/vocab"
)

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Context, when set, is a prompt that conditions the text and is not
	// scored itself. It is tokenized as a prompt is (with BOS); the text
	// is scored exactly, byte for byte, as the tokens a generation after
	// that prompt would produce for it (see Continuation).
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
//
// On a TextBackend it asks the server (a PromptScorer whose Capabilities
// say Echo); a server that cannot score a given text is ErrCannotScore.
func Score(ctx context.Context, b Backend, text string, opts ScoreOptions) (*ScoreResult, error) {
	if text == "" {
		return nil, errors.New("empty text: nothing to score")
	}
	lb, ok := b.(LogitsBackend)
	if !ok {
		ps, ok := b.(PromptScorer)
		if !ok || !b.Capabilities().Echo {
			return nil, ErrCannotScore
		}
		return ps.ScorePrompt(ctx, opts.Context, text, opts.TopLogprobs)
	}
	return scoreLogits(ctx, lb, text, opts)
}

// ErrCannotScore is returned by Score on a backend that cannot score a
// given text (a server without echo, as OpenAI's chat API).
var ErrCannotScore = errors.New("the backend cannot score a given text")

func scoreLogits(ctx context.Context, b LogitsBackend, text string, opts ScoreOptions) (*ScoreResult, error) {
	var all []int
	nUnscored := 1
	if opts.Context != "" {
		pre, rest, err := Continuation(b, opts.Context, text)
		if err != nil {
			return nil, err
		}
		all, nUnscored = append(pre, rest...), len(pre)
	} else {
		var err error
		if all, err = b.Tokenize(text, true); err != nil {
			return nil, fmt.Errorf("tokenize text: %w", err)
		}
		if v := b.Vocab(); !utf8.ValidString(text) && !spellsText(v, all, text) {
			// the tokenizer read U+FFFD for the bytes that are not UTF-8
			if all, err = spellBytes(b, text); err != nil {
				return nil, err
			}
			if v.AddBOS() {
				all = append([]int{v.BOS()}, all...)
			}
		}
	}
	return ScoreTokens(ctx, b, all[:nUnscored], all[nUnscored:], opts.TopLogprobs)
}

// Continuation returns the tokens of prompt as a generation sees it
// (tokenized with BOS), and the tokens of text as a continuation of it,
// which spell text exactly: the tokens of prompt+text past the prompt's
// when the two tokenizations agree there; otherwise (a token of the
// whole straddles the boundary) text tokenized alone, with a leading
// space the tokenizer adds (SentencePiece does) taken back out, and
// failing that, text spelled greedily with the longest tokens of the
// vocabulary. Every byte of text is then scored, and nothing else.
func Continuation(b LogitsBackend, prompt, text string) (prefix, tokens []int, err error) {
	if prefix, err = b.Tokenize(prompt, true); err != nil {
		return nil, nil, fmt.Errorf("tokenize prompt: %w", err)
	}
	if len(prefix) == 0 {
		return nil, nil, errors.New("the prompt has no tokens to condition on")
	}
	v := b.Vocab()
	whole, err := b.Tokenize(prompt+text, true)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize prompt and text: %w", err)
	}
	if len(whole) > len(prefix) && slices.Equal(whole[:len(prefix)], prefix) && string(v.Decode(whole[len(prefix):])) == text {
		return prefix, whole[len(prefix):], nil
	}
	sp := &speller{v: v}
	alone, err := tokenizeAlone(b, text, sp)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenize text: %w", err)
	}
	if alone != nil {
		return prefix, alone, nil
	}
	out, ok := sp.spell([]byte(text))
	if !ok {
		return nil, nil, fmt.Errorf("text %.40q: the vocabulary cannot spell it", text)
	}
	return prefix, out, nil
}

// spellsText reports whether tokens (after a BOS) spell text, or text
// after the leading space SentencePiece adds.
func spellsText(v *vocab.Vocab, tokens []int, text string) bool {
	if v.AddBOS() && len(tokens) > 0 && tokens[0] == v.BOS() {
		tokens = tokens[1:]
	}
	got := string(v.Decode(tokens))
	return got == text || got == " "+text
}

// tokenizeAlone returns text tokenized alone when its tokens spell it
// exactly, with a leading space the tokenizer adds (SentencePiece does)
// taken back out; nil when they do not.
func tokenizeAlone(b LogitsBackend, text string, sp *speller) ([]int, error) {
	v := b.Vocab()
	alone, err := b.Tokenize(text, false)
	if err != nil {
		return nil, err
	}
	got := string(v.Decode(alone))
	if got == text {
		return alone, nil
	}
	if len(alone) > 0 && got == " "+text {
		if first := v.Bytes(alone[0]); len(first) > 0 && first[0] == ' ' {
			if fixed, ok := sp.spell(first[1:]); ok {
				return append(fixed, alone[1:]...), nil
			}
		}
	}
	return nil, nil
}

// speller spells bytes with the vocabulary's longest tokens, indexing
// the vocabulary on first use and once.
type speller struct {
	v *vocab.Vocab
	s *vocab.Speller
}

func (sp *speller) spell(b []byte) ([]int, bool) {
	if sp.s == nil {
		sp.s = sp.v.Speller()
	}
	return sp.s.Spell(b)
}

// spellBytes returns tokens whose bytes are exactly text, which is not
// UTF-8: llama.cpp's BPE tokenizers read a byte that is not UTF-8 as
// U+FFFD. Each run of UTF-8 is tokenized alone (spelled with the
// vocabulary's longest tokens where its tokens would not be exactly it)
// and each other byte is spelled with the vocabulary's byte token. It
// stops once the tokens are more than the context holds.
func spellBytes(b LogitsBackend, text string) ([]int, error) {
	sp := &speller{v: b.Vocab()}
	var out []int
	for i := 0; i < len(text); {
		if len(out) > b.ContextSize() {
			return nil, fmt.Errorf("the text's first %d bytes take %d tokens, the context holds %d", i, len(out), b.ContextSize())
		}
		j := i
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			j += n
		}
		if j > i {
			if toks, err := tokenizeAlone(b, text[i:j], sp); err == nil && toks != nil {
				out, i = append(out, toks...), j
				continue
			}
		} else { // a byte that is not UTF-8
			j = i + 1
		}
		toks, ok := sp.spell([]byte(text[i:j]))
		if !ok {
			return nil, fmt.Errorf("text %.40q: the vocabulary cannot spell its bytes %.40q at offset %d", text, text[i:j], i)
		}
		out, i = append(out, toks...), j
	}
	return out, nil
}

// ScoreTokens returns the log-probability of every token of tokens given
// the tokens before it, starting from prefix (which must not be empty:
// at least BOS, or a prompt). Use it to score exact token sequences,
// such as a generation's own tokens: re-tokenizing text is not always
// faithful (llama.cpp replaces invalid UTF-8 with U+FFFD, for one).
// topN is how many alternatives to report per token.
func ScoreTokens(ctx context.Context, b LogitsBackend, prefix, tokens []int, topN int) (*ScoreResult, error) {
	v := b.Vocab()
	switch {
	case len(prefix) == 0:
		return nil, errors.New("score: no prefix to condition the first token on (give BOS or a prompt)")
	case len(tokens) == 0:
		return nil, errors.New("score: no tokens to score")
	case topN < 0 || topN > v.Len():
		return nil, &OptionError{"TopLogprobs", fmt.Sprint(topN), fmt.Sprintf("want a count in [0, %d]", v.Len())}
	}
	all := append(append(make([]int, 0, len(prefix)+len(tokens)), prefix...), tokens...)
	nUnscored := len(prefix)
	for i, t := range all {
		if t < 0 || t >= v.Len() {
			return nil, fmt.Errorf("score: token %d at position %d is outside the vocabulary of %d", t, i, v.Len())
		}
	}
	if len(all) > b.ContextSize() {
		return nil, fmt.Errorf("%d tokens (%d before the text, %d of it), the context holds %d", len(all), len(prefix), len(tokens), b.ContextSize())
	}
	res := &ScoreResult{Unscored: all[:nUnscored:nUnscored]}
	nl := b.NumLogits()
	logits := make([]float32, min(scoreWindow, len(all)-nUnscored)*nl) // one row per scored token, a window at a time
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
