package decode

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"unicode/utf8"

	"github.com/reins-go/reins/internal/logspace"
)

// Bounds of the rest of a language that planFinite enumerates.
const (
	maxFiniteTexts = 16 // texts
	maxFiniteBytes = 64 // bytes of each
	maxFiniteNodes = maxFiniteTexts * maxFiniteBytes
)

// planFinite handles a refusal where the way on is one of a few short
// texts (an enum value, a key, a choice; see finiteRest), the server's
// alternatives holding none of them: it sets them aside for the next
// round trip to score, and reports whether it did.
func (r *textRun) planFinite(br *textBranch) bool {
	if len(br.need) > 0 || r.topK < 1 || partialTail(br.text) > 0 {
		return false // healing, or a character cut in two that the next round trip mends first
	}
	texts, ok := finiteRest(br.con)
	if !ok || len(texts) == 0 {
		return false
	}
	br.finite = texts
	return true
}

// finiteRest returns the few short ways on from con's state: every text
// that takes it to an end after which nothing may follow, or to the end
// of a word (a run of letters, digits, '_' and non-ASCII characters
// after which the constraint allows a byte of another kind: an enum
// value, a key, a number), when they are at most maxFiniteTexts of at
// most maxFiniteBytes each; else false. con is left as it was.
func finiteRest(con TextConstraint) ([]string, bool) {
	var texts []string
	var buf []byte
	nodes := 0
	var walk func() bool
	walk = func() bool {
		if nodes++; nodes > maxFiniteNodes {
			return false
		}
		var next []byte
		for b := range 256 {
			mark := con.Mark()
			if con.Accept([]byte{byte(b)}) {
				next = append(next, byte(b))
				con.Undo(mark)
			}
		}
		if len(buf) > 0 {
			boundary := con.CanEnd()
			for _, b := range next {
				boundary = boundary || !wordByte(b)
			}
			if boundary {
				texts = append(texts, string(buf))
				if len(texts) > maxFiniteTexts {
					return false
				}
			}
		}
		branches := 0
		for _, b := range next {
			if len(buf) > 0 && !wordByte(b) {
				continue // past the word's end: the next round trip's business
			}
			if branches++; branches > maxFiniteTexts || len(buf) == maxFiniteBytes {
				return false
			}
			mark := con.Mark()
			con.Accept([]byte{b})
			buf = append(buf, b)
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

// wordByte reports whether b continues a word for finiteRest: a letter,
// a digit, '_', or a byte of a non-ASCII character.
func wordByte(b byte) bool {
	return b >= 0x80 || b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// finiteScore is one text's score after the output so far.
type finiteScore struct {
	text   string
	sum    float64 // the log-probability of tokens, and of rest as a bound
	tokens []Token // the server's tokens that spell the text, or its start
	rest   string  // the end of the text the server's alternatives left
	exact  bool    // scored by the server (echo), not through alternatives
}

// chooseFinite scores the texts planFinite set aside, each after the
// prompt and the output so far: exactly on a server that scores a given
// text (Capabilities().Echo), else by following each through the
// server's alternatives, one request per token (texts that share a
// beginning share its requests), a text that leaves them scored as a
// bound (the probability they left out). It picks one (the most
// probable at temperature 0, else sampled from their probabilities at
// the temperature) and appends it; the output goes on after it unless
// it is complete. The first of its tokens
// reports, as its constrained log-probability, the text's among the
// texts (TopK when they were followed through alternatives); the rest
// of it is then forced.
func (r *textRun) chooseFinite(ctx context.Context, br *textBranch) error {
	texts := br.finite
	br.finite = nil
	output := r.opts.Prefill + string(br.text)
	left := r.opts.MaxTokens - len(br.gen)
	asked := map[string]*TextResponse{}
	var scores []finiteScore
	for _, t := range texts {
		sc, err := r.scoreFinite(ctx, br, output, t, asked)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("scoring %q, one of the %d ways the output may end: %w", t, len(texts), err)
		}
		br.usage.Scored++
		n := len(sc.tokens)
		if sc.rest != "" {
			n++
		}
		if n == 0 || n > left {
			continue // not spelled by the server's tokens, or past the budget
		}
		scores = append(scores, sc)
	}
	if len(scores) == 0 {
		return r.stalled(br)
	}
	z := math.Inf(-1)
	for _, sc := range scores {
		z = logspace.Add(z, sc.sum)
	}
	pick := 0
	if temp := r.opts.Sampling.Temperature; temp > 0 {
		rng := rand.New(rand.NewPCG(br.seed, uint64(br.usage.Requests)))
		weights, total := make([]float64, len(scores)), 0.0
		for i, sc := range scores {
			weights[i] = math.Exp((sc.sum - z) / temp)
			total += weights[i]
		}
		u := rng.Float64() * total
		for pick = 0; pick < len(weights)-1 && u >= weights[pick]; pick++ {
			u -= weights[pick]
		}
	} else {
		for i, sc := range scores {
			if sc.sum > scores[pick].sum {
				pick = i
			}
		}
	}
	sc := scores[pick]
	for i, tok := range sc.tokens {
		mark := br.con.Mark()
		if !br.fits(tok.Bytes) {
			return fmt.Errorf("reins bug: the scored text %q leaves the constraint", sc.text)
		}
		if i == 0 {
			tok.Constrained = &Logprobs{Logprob: sc.sum - z, TopK: !sc.exact}
		} else {
			tok.Constrained, tok.Forced = &Logprobs{Logprob: 0}, true
		}
		// Kept as an alternative with none beside it: healing does not
		// take it back (and lose its score), nor backtracking.
		r.keep(br, tok, mark, pieceAlt, nil, false)
		if br.done {
			return nil // a stop string ended the output within the text
		}
	}
	if sc.rest != "" {
		r.keepUnscored(br, []byte(sc.rest), pieceForced)
		if br.done {
			return nil
		}
	}
	switch {
	case br.con.CanEnd() && !r.canGoOn(br):
		br.finishWith(FinishStop)
	case len(br.gen) >= r.opts.MaxTokens:
		br.finishWith(FinishLength)
	}
	return nil
}

// scoreFinite scores text t after output (see chooseFinite); asked
// holds the answers to requests already made, by output.
func (r *textRun) scoreFinite(ctx context.Context, br *textBranch, output, t string, asked map[string]*TextResponse) (finiteScore, error) {
	sc := finiteScore{text: t}
	if ps, ok := r.b.(PromptScorer); ok && r.caps.Echo {
		res, err := ps.ScorePrompt(ctx, r.prompt+output, t, min(r.topK, r.opts.TopLogprobs))
		br.usage.Requests++
		if err != nil {
			return sc, err
		}
		var spelled []byte
		for _, tok := range res.Tokens {
			spelled = append(spelled, tok.Bytes...)
		}
		if string(spelled) == t { // else the server's tokens straddle the output's end
			sc.sum, sc.tokens, sc.exact = res.Sum, res.Tokens, true
		}
		return sc, nil
	}
	for done := 0; done < len(t); {
		seen := output + t[:done]
		resp, ok := asked[seen]
		if !ok {
			if !utf8.ValidString(seen) {
				break // a character cut in two cannot be sent: the rest is unseen
			}
			var err error
			resp, err = r.b.Continue(ctx, TextRequest{Prompt: r.prompt, Output: seen, MaxTokens: 1, TopLogprobs: r.topK})
			br.usage.Requests++
			if err != nil {
				return sc, err
			}
			asked[seen] = resp
		}
		if len(resp.Tokens) == 0 {
			break
		}
		first := resp.Tokens[0]
		if err := checkToken(first); err != nil {
			return sc, err
		}
		alts := append([]TopLogprob{{ID: first.ID, Token: first.Token, Bytes: first.Bytes, Logprob: first.Logprob}}, first.TopLogprobs...)
		best, mass, listed := -1, 0.0, false
		for j, a := range alts {
			if j > 0 {
				mass += math.Exp(a.Logprob)
				listed = listed || string(a.Bytes) == string(first.Bytes)
			}
			if rest := t[done:]; len(a.Bytes) > 0 && len(a.Bytes) <= len(rest) && string(a.Bytes) == rest[:len(a.Bytes)] &&
				(best < 0 || len(a.Bytes) > len(alts[best].Bytes)) {
				best = j
			}
		}
		if !listed {
			mass += math.Exp(first.Logprob)
		}
		if best < 0 { // the text left the alternatives: what they left out bounds it
			sc.sum += math.Log(max(1e-300, 1-mass))
			break
		}
		a := alts[best]
		sc.sum += a.Logprob
		sc.tokens = append(sc.tokens, Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: first.TopLogprobs})
		done += len(a.Bytes)
	}
	spelled := 0
	for _, tok := range sc.tokens {
		spelled += len(tok.Bytes)
	}
	sc.rest = t[spelled:]
	return sc, nil
}
