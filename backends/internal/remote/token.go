package remote

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reins-go/reins/decode"
)

// RawToken is what a server says of one token: its text, its bytes when
// it gives them, its log-probability and its alternatives.
type RawToken struct {
	ID       int // -1 when the server does not say
	Text     string
	Bytes    []int // nil when the server gives none
	HasBytes bool
	Logprob  *float64 // nil when the server gives none (an echoed first token)
	Top      []RawToken
}

// replacement is U+FFFD, which a server's JSON puts in place of the
// bytes of a token that holds part of a character.
const replacement = "\uFFFD"

// Resolve turns t into a decode.Token whose Token and Bytes agree: its
// bytes are the server's when it gives them (checked against its text),
// else its text, else (vLLM's "bytes:\xe2\x80") the bytes it spells.
// blind is true when the bytes are unknown: the text holds U+FFFD that
// may stand for bytes the server's JSON could not carry (Ollama's do:
// their bytes are those of U+FFFD); the Aligner finds them in the text
// of the answer. Alternatives whose bytes are unknown are left out (their
// probability counts as unseen); a token or alternative whose text and
// bytes disagree is an error.
func Resolve(t RawToken) (tok decode.Token, blind bool, err error) {
	b, blind, err := tokenBytes(t)
	if err != nil {
		return tok, false, err
	}
	tok = decode.Token{ID: t.ID, Token: string(b), Bytes: decode.Bytes(b)}
	if t.Logprob == nil {
		return tok, blind, fmt.Errorf("the server's token %q has no log-probability", t.Text)
	}
	tok.Logprob = *t.Logprob
	if err := checkLogprob(t.Text, tok.Logprob); err != nil {
		return tok, blind, err
	}
	for _, a := range t.Top {
		ab, ablind, err := tokenBytes(a)
		if err != nil {
			return tok, blind, fmt.Errorf("an alternative to %q: %w", t.Text, err)
		}
		if a.Logprob == nil {
			return tok, blind, fmt.Errorf("the server's alternative %q has no log-probability", a.Text)
		}
		if err := checkLogprob(a.Text, *a.Logprob); err != nil {
			return tok, blind, err
		}
		if ablind || len(ab) == 0 {
			continue
		}
		tok.TopLogprobs = append(tok.TopLogprobs, decode.TopLogprob{ID: a.ID, Token: string(ab), Bytes: decode.Bytes(ab), Logprob: *a.Logprob})
	}
	// Most probable first, as every server sends them (Go maps do not).
	slices.SortStableFunc(tok.TopLogprobs, func(a, b decode.TopLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return tok, blind, nil
}

// minLogprob is below any log-probability a model gives (float32's
// smallest probability is e^-104, float64's e^-745; OpenAI writes
// -9999 for less): lower ones, summed, could overflow to -Inf.
const minLogprob = -1e5

func checkLogprob(text string, lp float64) error {
	if math.IsNaN(lp) || lp > 1e-4 {
		return fmt.Errorf("the server's token %q has log-probability %v", text, lp)
	}
	if lp < minLogprob {
		return fmt.Errorf("the server's token %q has log-probability %v, below %v, which no model gives", text, lp, float64(minLogprob))
	}
	return nil
}

// tokenBytes returns t's bytes, checked against its text.
func tokenBytes(t RawToken) (b []byte, blind bool, err error) {
	if t.HasBytes {
		b = make([]byte, len(t.Bytes))
		for i, x := range t.Bytes {
			if x < 0 || x > 255 {
				return nil, false, fmt.Errorf("the server's token %q has byte %d, outside [0, 255]", t.Text, x)
			}
			b[i] = byte(x)
		}
		if !Spells(t.Text, b) {
			return nil, false, fmt.Errorf("the server's token %q does not match its bytes %v", t.Text, b)
		}
		// Bytes that are U+FFFD's may be a stand-in (Ollama derives
		// bytes from the text its JSON already replaced).
		return b, strings.Contains(string(b), replacement), nil
	}
	if rest, ok := strings.CutPrefix(t.Text, "bytes:"); ok {
		if b, ok := unescapeBytes(rest); ok {
			return b, false, nil
		}
	}
	if !utf8.ValidString(t.Text) {
		return []byte(t.Text), false, nil
	}
	return []byte(t.Text), strings.Contains(t.Text, replacement), nil
}

// Spells reports whether a server's text for a token is what its bytes
// spell: the same bytes, or, for bytes that are not valid UTF-8, the
// text with each invalid run replaced by U+FFFD (JSON cannot carry
// them), or vLLM's "bytes:\xNN" spelling.
func Spells(text string, b []byte) bool {
	if text == string(b) {
		return true
	}
	if utf8.Valid(b) {
		return false
	}
	if rest, ok := strings.CutPrefix(text, "bytes:"); ok {
		if u, ok := unescapeBytes(rest); ok && bytes.Equal(u, b) {
			return true
		}
	}
	return collapse(text) == collapse(strings.ToValidUTF8(string(b), replacement))
}

// collapse merges runs of U+FFFD, which encoders count differently.
func collapse(s string) string {
	for strings.Contains(s, replacement+replacement) {
		s = strings.ReplaceAll(s, replacement+replacement, replacement)
	}
	return s
}

// unescapeBytes reads text with \xNN escapes.
func unescapeBytes(s string) ([]byte, bool) {
	var out []byte
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+4 <= len(s) && s[i+1] == 'x' {
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return nil, false
			}
			out = append(out, byte(v))
			i += 4
			continue
		}
		out = append(out, s[i])
		i++
	}
	return out, true
}

// Aligner checks a server's tokens against the text of its answer, as
// they arrive: the tokens must spell the text. A blind token (one whose
// bytes the server's JSON could not carry) takes its bytes from the
// text; a run of them becomes one token with the run's summed
// log-probability and no alternatives.
type Aligner struct {
	text []byte
	toks []pending
}

type pending struct {
	tok   decode.Token
	blind bool
}

// ErrMisaligned is wrapped by the error of tokens that do not spell the
// answer's text.
var ErrMisaligned = errors.New("the server's tokens do not spell its text")

// Add takes more of the answer's text and more tokens.
func (a *Aligner) Add(text string, toks []decode.Token, blind []bool) {
	a.text = append(a.text, text...)
	for i, t := range toks {
		a.toks = append(a.toks, pending{t, blind[i]})
	}
}

// Ready returns the tokens that the text received so far confirms; with
// end, the answer is over, and everything must be accounted for.
func (a *Aligner) Ready(end bool) ([]decode.Token, error) {
	var out []decode.Token
	for len(a.toks) > 0 {
		p := a.toks[0]
		if !p.blind {
			switch {
			case bytes.HasPrefix(a.text, p.tok.Bytes):
				out = append(out, p.tok)
				a.text = a.text[len(p.tok.Bytes):]
				a.toks = a.toks[1:]
				continue
			case bytes.HasPrefix(p.tok.Bytes, a.text) && !end:
				return out, nil // the text has not caught up
			}
			return out, fmt.Errorf("%w: token %q where the text goes on %q", ErrMisaligned, p.tok.Token, clip(a.text))
		}
		// A run of blind tokens spans the text up to where the next
		// known token matches, at a character boundary.
		n := 1
		for n < len(a.toks) && a.toks[n].blind {
			n++
		}
		run := a.toks[:n]
		var q int
		if n == len(a.toks) {
			if !end {
				return out, nil
			}
			q = len(a.text)
		} else {
			next := a.toks[n].tok.Bytes
			q = -1
			for i := n; i+len(next) <= len(a.text); i++ {
				if utf8.Valid(a.text[:i]) && bytes.HasPrefix(a.text[i:], next) {
					q = i
					break
				}
			}
			if q < 0 {
				if !end {
					return out, nil
				}
				return out, fmt.Errorf("%w: %d tokens the server could not spell, then %q, where the text goes on %q", ErrMisaligned, n, next, clip(a.text))
			}
		}
		if q < 1 {
			return out, fmt.Errorf("%w: %d tokens with no text", ErrMisaligned, n)
		}
		m := decode.Token{ID: -1, Token: string(a.text[:q]), Bytes: decode.Bytes(bytes.Clone(a.text[:q]))}
		if n == 1 {
			m.ID = run[0].tok.ID
		}
		for _, r := range run {
			m.Logprob += r.tok.Logprob
		}
		if n == 1 {
			m.TopLogprobs = run[0].tok.TopLogprobs
		}
		out = append(out, m)
		a.text = a.text[q:]
		a.toks = a.toks[n:]
	}
	if end && len(a.text) > 0 {
		return out, fmt.Errorf("%w: the text goes on %q past the last token", ErrMisaligned, clip(a.text))
	}
	return out, nil
}

// Pending reports whether tokens wait for text.
func (a *Aligner) Pending() int { return len(a.toks) }

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
