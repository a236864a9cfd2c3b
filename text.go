package reins

import (
	"context"
	"errors"
	"math"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/earley"
)

// textMatcher judges a server's output on bytes with the constraint's
// parser: a server returns text, and there is no vocabulary to mask with.
// It implements decode.TextConstraint.
type textMatcher struct{ p *earley.Parser }

func (c *Constraint) textMatcher() decode.TextConstraint {
	return &textMatcher{earley.NewParser(c.prog)}
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

// Mark returns the current step; what comes before can no longer be
// undone, so the parser commits it.
func (t *textMatcher) Mark() int {
	t.p.Commit()
	return t.p.Len()
}

func (t *textMatcher) Undo(mark int)    { t.p.Truncate(mark) }
func (t *textMatcher) CanEnd() bool     { return t.p.CanEnd() }
func (t *textMatcher) Expected() string { return t.p.Expected() }

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
		text := o + then
		opt := Option{Text: o, TopK: true}
		for done := 0; done < len(text); {
			seen := text[:done]
			resp, ok := asked[seen]
			if !ok {
				var err error
				resp, err = m.text.Continue(ctx, decode.TextRequest{Prompt: prompt + seen, MaxTokens: 1, TopLogprobs: caps.TopLogprobs})
				if err != nil {
					return nil, err
				}
				asked[seen] = resp
			}
			if len(resp.Tokens) == 0 {
				opt.Bound = true // the server ends here: the rest is unseen
				break
			}
			first := resp.Tokens[0]
			alts := append([]decode.TopLogprob{{ID: first.ID, Token: first.Token, Bytes: first.Bytes, Logprob: first.Logprob}}, first.TopLogprobs...)
			best := -1
			mass := 0.0
			for j, a := range alts {
				if j > 0 {
					mass += math.Exp(a.Logprob)
				}
				rest := text[done:]
				if len(a.Bytes) > 0 && len(a.Bytes) <= len(rest) && string(a.Bytes) == rest[:len(a.Bytes)] &&
					(best < 0 || len(a.Bytes) > len(alts[best].Bytes)) {
					best = j
				}
			}
			if best < 0 {
				opt.Bound = true
				opt.Logprob += math.Log(max(1e-300, 1-mass))
				break
			}
			a := alts[best]
			opt.Logprob += a.Logprob
			opt.Tokens = append(opt.Tokens, decode.Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: first.TopLogprobs})
			done += len(a.Bytes)
		}
		out[i] = opt
	}
	return out, nil
}
