package decode

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/reins-go/reins/internal/logspace"
)

// Bounds of the rest of a language that planFinite enumerates.
const (
	maxFiniteTexts = 16 // texts
	maxFiniteBytes = 64 // bytes of each
	maxFiniteNodes = maxFiniteTexts * maxFiniteBytes
)

// planFinite handles a refusal where the rest of the language is a few
// short texts (an enum or a choice at the output's end, the server's
// alternatives holding none of them): on a server that scores a given
// text (Capabilities().Echo), it sets them aside for the next round
// trip to score, and reports whether it did.
func (r *textRun) planFinite(br *textBranch) bool {
	if !r.caps.Echo || len(br.need) > 0 {
		return false
	}
	if _, ok := r.b.(PromptScorer); !ok {
		return false
	}
	texts, ok := finiteRest(br.con)
	if !ok || len(texts) == 0 {
		return false
	}
	br.finite = texts
	return true
}

// finiteRest returns every text that takes con from its state to an end
// after which nothing may follow, when they are at most maxFiniteTexts
// of at most maxFiniteBytes each; else false. con is left as it was.
func finiteRest(con TextConstraint) ([]string, bool) {
	var texts []string
	var buf []byte
	nodes := 0
	var walk func() bool
	walk = func() bool {
		if nodes++; nodes > maxFiniteNodes {
			return false
		}
		if len(buf) > 0 && con.CanEnd() {
			texts = append(texts, string(buf))
			if len(texts) > maxFiniteTexts {
				return false
			}
		}
		branches := 0
		for b := range 256 {
			mark := con.Mark()
			if !con.Accept([]byte{byte(b)}) {
				continue
			}
			if branches++; branches > maxFiniteTexts || len(buf) == maxFiniteBytes {
				con.Undo(mark)
				return false
			}
			buf = append(buf, byte(b))
			ok := walk()
			buf = buf[:len(buf)-1]
			con.Undo(mark)
			if !ok {
				return false
			}
		}
		return true
	}
	if !walk() {
		return nil, false
	}
	return texts, true
}

// chooseFinite scores the texts planFinite set aside, each after the
// prompt and the output so far, picks one (the most probable at
// temperature 0, else sampled from their probabilities at the
// temperature), and ends the output with it. The first of its tokens
// reports, as its constrained log-probability, the text's among the
// texts (the rest of it is then forced).
func (r *textRun) chooseFinite(ctx context.Context, br *textBranch) error {
	texts := br.finite
	br.finite = nil
	ps := r.b.(PromptScorer) // planFinite checked
	prefix := r.prompt + r.opts.Prefill + string(br.text)
	left := r.opts.MaxTokens - len(br.gen)
	var scored []*ScoreResult
	var kept []string
	for _, t := range texts {
		res, err := ps.ScorePrompt(ctx, prefix, t, min(r.topK, r.opts.TopLogprobs))
		br.usage.Requests++
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("scoring %q, one of the %d ways the output may end: %w", t, len(texts), err)
		}
		br.usage.Scored++
		var spelled []byte
		for _, tok := range res.Tokens {
			spelled = append(spelled, tok.Bytes...)
		}
		if string(spelled) != t || len(res.Tokens) > left {
			continue // the server's tokens straddle the output's end, or the budget is short
		}
		scored, kept = append(scored, res), append(kept, t)
	}
	if len(kept) == 0 {
		return r.stalled(br)
	}
	z := math.Inf(-1)
	for _, res := range scored {
		z = logspace.Add(z, res.Sum)
	}
	pick := 0
	if temp := r.opts.Sampling.Temperature; temp > 0 {
		rng := rand.New(rand.NewPCG(br.seed, uint64(br.usage.Requests)))
		weights, total := make([]float64, len(scored)), 0.0
		for i, res := range scored {
			weights[i] = math.Exp((res.Sum - z) / temp)
			total += weights[i]
		}
		u := rng.Float64() * total
		for pick = 0; pick < len(weights)-1 && u >= weights[pick]; pick++ {
			u -= weights[pick]
		}
	} else {
		for i, res := range scored {
			if res.Sum > scored[pick].Sum {
				pick = i
			}
		}
	}
	for i, tok := range scored[pick].Tokens {
		mark := br.con.Mark()
		if !br.fits(tok.Bytes) {
			return fmt.Errorf("reins bug: the scored text %q leaves the constraint", kept[pick])
		}
		if i == 0 {
			tok.Constrained = &Logprobs{Logprob: scored[pick].Sum - z}
		} else {
			tok.Constrained, tok.Forced = &Logprobs{Logprob: 0}, true
		}
		r.keep(br, tok, mark, pieceForced, nil, false)
	}
	br.finishWith(FinishStop)
	return nil
}
