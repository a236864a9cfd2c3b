package decode

import (
	"context"
	"fmt"
	"math"
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
	// The texts' log-probabilities go through the sampler as a
	// distribution: greedy at temperature 0, else tempered and sampled.
	lp := make([]float32, len(scores))
	for i, sc := range scores {
		lp[i] = float32(sc.sum - z)
	}
	sampler, err := NewSampler(SamplingOptions{Temperature: r.opts.Sampling.Temperature, Seed: br.seed + uint64(br.usage.Requests)})
	if err != nil {
		return err
	}
	pick, err := sampler.Sample(lp)
	if err != nil {
		return err
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
	f, err := FollowTopK(ctx, r.b, r.prompt, output, t, r.topK, asked)
	br.usage.Requests += f.Requests
	if err != nil {
		return sc, err
	}
	sc.sum, sc.tokens = f.Logprob, f.Tokens
	sc.rest = t[f.Spelled:]
	return sc, nil
}

// TopKScore is a text's score through a server's top alternatives
// (FollowTopK).
type TopKScore struct {
	// Tokens are the server's tokens that spell the text, or its start;
	// they spell its first Spelled bytes.
	Tokens  []Token
	Spelled int
	// Logprob is the sum of their log-probabilities and, when the text
	// left the alternatives (Bound), of the probability the alternatives
	// there left out: an upper bound of the rest.
	Logprob float64
	Bound   bool
	// Requests is how many requests it made.
	Requests int
}

// FollowTopK scores text after prompt and output on a TextBackend that
// cannot score a given text: one request for one token at each position
// of the text, with topK alternatives, taking the longest alternative
// that goes on spelling it. Where none does (or the server ends, or the
// text cuts a character in two, which a request cannot carry) the rest
// is a bound (TopKScore.Bound). asked holds the answers to requests
// already made, by output, so that texts sharing a beginning share its
// requests; the server's tokens are checked as generation checks them.
func FollowTopK(ctx context.Context, b TextBackend, prompt, output, text string, topK int, asked map[string]*TextResponse) (TopKScore, error) {
	var sc TopKScore
	for sc.Spelled < len(text) {
		seen := output + text[:sc.Spelled]
		resp, ok := asked[seen]
		if !ok {
			if !utf8.ValidString(seen) {
				break
			}
			var err error
			resp, err = b.Continue(ctx, TextRequest{Prompt: prompt, Output: seen, MaxTokens: 1, TopLogprobs: topK})
			sc.Requests++
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
			if rest := text[sc.Spelled:]; len(a.Bytes) > 0 && len(a.Bytes) <= len(rest) && string(a.Bytes) == rest[:len(a.Bytes)] &&
				(best < 0 || len(a.Bytes) > len(alts[best].Bytes)) {
				best = j
			}
		}
		if !listed {
			mass += math.Exp(first.Logprob)
		}
		if best < 0 { // the text left the alternatives: what they left out bounds it
			sc.Logprob += math.Log(max(1e-300, 1-mass))
			break
		}
		a := alts[best]
		sc.Logprob += a.Logprob
		sc.Tokens = append(sc.Tokens, Token{ID: a.ID, Token: a.Token, Bytes: a.Bytes, Logprob: a.Logprob, TopLogprobs: first.TopLogprobs})
		sc.Spelled += len(a.Bytes)
	}
	sc.Bound = sc.Spelled < len(text)
	return sc, nil
}
