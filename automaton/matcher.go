package automaton

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/vocab"
)

// RestoreWindow is how many tokens back a Matcher can Restore. Older
// parse state is compacted; keep an older state with Clone instead.
const RestoreWindow = 32

// Matcher is one sequence's position in an Automaton. It implements
// decode.Constraint.
//
// Its state is the grammar parser's Earley sets. The sets of the last
// RestoreWindow tokens are kept whole, so Restore within the window is a
// truncation; older sets are compacted to the few items a later
// completion needs, so a long output keeps a small state.
type Matcher struct {
	a      *Automaton
	p      *earley.Parser
	n      int     // tokens advanced
	bounds []int32 // parser length before each of the last tokens (at most RestoreWindow)
	ended  bool    // an end-of-generation token was advanced
	endAt  int     // len(steps) right after that token
	tok    int     // the token being tested by inSet
	sig    []uint32
	// last is the state mask of the step FillMask saw last, and
	// lastListing that step's items (earley.Parser.Listing): a step that
	// lists the same, as the next character of a string often does, has
	// the same mask, found without a sort or a lookup.
	last        *stateMask
	lastListing []uint32
	// lastCD is the context-dependent tokens the whole state of key
	// lastCDKey (0 none) allows, as the automaton's cache holds them.
	lastCDKey uint32
	lastCD    []int32
	mask      []uint32 // the mask being filled, for allow
	allow     func(tok int32)
	// allowed collects the context-dependent tokens allow sets.
	allowed []int32
	// memo keeps the prices of finishing after the rules of earlier
	// steps, for TokensToEnd.
	memo earley.CostMemo
}

// ErrEnded is returned by Advance after an end-of-generation token.
var ErrEnded = errors.New("constraint: the output has ended")

func (m *Matcher) inSet(set int) bool {
	return m.a.tokenSets[set][m.tok/32]&(1<<(m.tok%32)) != 0
}

// FillMask sets the bits of the tokens that may come next.
func (m *Matcher) FillMask(mask []uint32) error {
	if len(mask) < MaskWords(m.a.vocab.Len()) {
		return fmt.Errorf("mask of %d words is too small for %d tokens", len(mask), m.a.vocab.Len())
	}
	if m.ended {
		clear(mask)
		return nil
	}
	if err := m.p.Err(); err != nil {
		return err
	}
	e := m.stateMask()
	e.fill(mask)
	if e.cd != nil {
		// The walk parses each context-dependent token: its work is
		// bounded, so that an ambiguous grammar fails the step instead of
		// taking minutes.
		m.p.SetWorkLimit(m.p.Work() + m.a.maskWork)
		m.fillContextDependent(e.cd, mask)
		m.p.SetWorkLimit(0)
		if err := m.p.Err(); err != nil {
			return fmt.Errorf("automaton: the mask's parse passed its budget of %d units (MaskWork): %w", m.a.maskWork, err)
		}
	}
	if len(m.a.tokenSets) > 0 { // else no token terminal can wait
		m.p.WaitingTokenSets(func(set int) {
			for i, w := range m.a.tokenSets[set] {
				mask[i] |= w
			}
		})
	}
	if m.p.CanEnd() {
		for _, id := range m.a.eog {
			mask[id/32] |= 1 << (id % 32)
		}
	}
	return nil
}

// stateMask returns the current step's state mask: the last one when
// the step lists its items as the last step FillMask saw did.
func (m *Matcher) stateMask() *stateMask {
	m.sig = m.p.Listing(m.sig[:0], m.a.canon)
	if m.last != nil && slices.Equal(m.sig, m.lastListing) {
		return m.last
	}
	m.last = nil // until the mask of this listing is known
	m.lastListing = append(m.lastListing[:0], m.sig...)
	if e := m.a.listedMask(m.sig); e != nil {
		m.last = e
		return e
	}
	slices.Sort(m.sig)
	m.sig = slices.Compact(m.sig)
	m.last = m.a.stateMask(m.p, m.sig)
	m.a.addListedMask(m.lastListing, m.last)
	return m.last
}

// fillContextDependent sets the bits of the context-dependent tokens
// cd that the whole parse state allows: from the cache when this state
// was seen before, else by walking them through the parser.
func (m *Matcher) fillContextDependent(cd *subtrees, mask []uint32) {
	a := m.a
	key := m.p.ContextKey(&a.contexts)
	toks, ok := m.lastCD, key != 0 && key == m.lastCDKey
	if !ok {
		a.mu.RLock()
		toks, ok = a.cdDone[key]
		a.mu.RUnlock()
	}
	if ok && key != 0 {
		m.lastCDKey, m.lastCD = key, toks
		for _, tok := range toks {
			mask[tok/32] |= 1 << (tok % 32)
		}
		return
	}
	m.mask, m.allowed = mask, m.allowed[:0]
	a.walkContextDependent(cd, m.p, m.allow)
	if key == 0 || m.p.Err() != nil {
		return // a state past maxContexts, or a walk cut short by its budget: not cached
	}
	a.mu.Lock()
	if a.cdTokens+len(m.allowed) <= cdCacheMax {
		if a.cdDone == nil {
			a.cdDone = map[uint32][]int32{}
		}
		if _, dup := a.cdDone[key]; !dup {
			a.cdDone[key] = slices.Clone(m.allowed)
			a.cdTokens += len(m.allowed) + 1
		}
	}
	a.mu.Unlock()
}

// Advance commits token t.
func (m *Matcher) Advance(t int) error {
	v := m.a.vocab
	switch {
	case m.ended:
		return ErrEnded
	case t < 0 || t >= v.Len():
		return fmt.Errorf("token %d is outside the vocabulary of %d", t, v.Len())
	case v.IsEOG(t):
		if !m.p.CanEnd() {
			return fmt.Errorf("end-of-generation token %d (%q) refused: the output is not complete; expected %s", t, v.Piece(t), m.p.Expected())
		}
		m.record(m.p.Len())
		m.ended = true
		m.endAt = m.n
		return nil
	}
	at := m.p.Len()
	m.tok = t
	if !m.p.AdvanceToken(m.text(t), m.inSet) {
		if err := m.p.Err(); err != nil {
			return err
		}
		return fmt.Errorf("token %d (%q) refused: expected %s", t, v.Bytes(t), m.p.Expected())
	}
	m.record(at)
	return nil
}

// Work returns the parsing work the matcher has done so far, in the
// units of MaskWork: a caller that walks many tokens bounds the whole
// walk with it.
func (m *Matcher) Work() int64 { return m.p.Work() }

// MaskWork bounds the parsing work of one mask's context-dependent
// tokens, in the parser's units (earley.Parser.Work): the call items its
// steps scan. The heaviest mask of the MaskBench development set takes a
// few hundred thousand; an ambiguous grammar (x ::= x x | "a" | "") would
// take minutes past a few hundred bytes, and fails its step instead with
// an error wrapping earley.ErrWorkBudget. A parser that has failed stays
// failed: FillMask and Advance return its error until Reset.
const MaskWork = 1 << 26

// text returns the bytes token t stands for in the grammar's text: none
// for control, unknown and unused tokens, which only token terminals
// match.
func (m *Matcher) text(t int) []byte {
	v := m.a.vocab
	if k := v.Kind(t); k.Special() || k == vocab.KindUnused {
		return nil
	}
	return v.Bytes(t)
}

// record counts an advanced token that began at parser length at, and
// keeps the boundaries of at least the last RestoreWindow tokens. It
// commits the parser in batches: once twice the window is kept, up to
// the window's oldest boundary. A commit moves every live set, so
// committing at each token would move the window's sets at each token.
func (m *Matcher) record(at int) {
	m.bounds = append(m.bounds, int32(at))
	m.n++
	if len(m.bounds) >= 2*RestoreWindow {
		extra := len(m.bounds) - RestoreWindow
		m.p.CommitTo(int(m.bounds[extra]))
		m.bounds = append(m.bounds[:0], m.bounds[extra:]...)
	}
}

// Branches reports whether at least two tokens may come next, as far as
// the next bytes tell without a mask: bytes the grammar allows whose
// single-byte tokens the vocabulary has, and end-of-generation where the
// output may end. It implements decode.Branching.
func (m *Matcher) Branches() bool {
	if m.ended {
		return false
	}
	next, _ := m.p.Next()
	n := 0
	for i, w := range next {
		n += bits.OnesCount64(w & m.a.singles[i])
	}
	if n < 2 && m.p.CanEnd() && len(m.a.vocab.EOG()) > 0 {
		n++
	}
	return n >= 2
}

// CanEnd reports whether the output may end here.
func (m *Matcher) CanEnd() bool { return m.ended || m.p.CanEnd() }

// Reset returns the matcher to the start of the grammar, keeping its
// buffers, so that one matcher can serve many outputs in turn.
func (m *Matcher) Reset() {
	m.p.Reset()
	m.n, m.bounds, m.ended, m.endAt = 0, m.bounds[:0], false, 0
	m.memo.Mark(0)
}

// Snapshot returns the number of tokens advanced.
func (m *Matcher) Snapshot() int { return m.n }

// Restore returns to a snapshot at most RestoreWindow tokens back, by
// truncating the parser. Reaching further back panics: Clone the matcher
// to keep an older state.
func (m *Matcher) Restore(mark int) {
	back := m.n - mark
	if mark < 0 || back < 0 || back > len(m.bounds) || back > RestoreWindow {
		panic(fmt.Sprintf("automaton: Restore(%d) with %d tokens advanced: a matcher restores at most %d tokens back (Clone it to keep older states)", mark, m.n, RestoreWindow))
	}
	if back == 0 {
		return
	}
	if m.ended && mark < m.endAt {
		m.ended, m.endAt = false, 0
	}
	m.p.Truncate(int(m.bounds[len(m.bounds)-back]))
	m.memo.Mark(m.p.Len())
	m.bounds = m.bounds[:len(m.bounds)-back]
	m.n = mark
}

// StateBytes returns the memory of the matcher's own state in bytes (the
// shared automaton excluded).
func (m *Matcher) StateBytes() int {
	return m.p.StateBytes() + 4*cap(m.bounds) + 4*cap(m.sig) + 4*cap(m.lastListing)
}

// Clone returns an independent matcher in the same state.
func (m *Matcher) Clone() *Matcher {
	c := m.a.NewMatcher()
	c.p.CopyFrom(m.p)
	c.n = m.n
	c.bounds = append([]int32(nil), m.bounds...)
	c.ended, c.endAt = m.ended, m.endAt
	return c
}

// Forced returns the bytes that are the only way on from here: each the
// one byte the grammar allows next, while the output cannot end and no
// token terminal waits. It leaves the matcher as it was. (Generation's
// fast-forward works on tokens: see decode.Options.Constraint.)
func (m *Matcher) Forced() []byte {
	if m.ended {
		return nil
	}
	return m.p.Forced()
}

// Expected describes what may come next, for error messages.
func (m *Matcher) Expected() string { return m.p.Expected() }
