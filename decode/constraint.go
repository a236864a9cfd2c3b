package decode

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/reins-go/reins/grammar"
)

// Constraint decides, at every step of a generation, which tokens may
// come next. It holds one sequence's state and is not safe for
// concurrent use; Clone gives an independent copy for a branch.
type Constraint interface {
	// FillMask sets in mask (one bit per logit: bit t%32 of word t/32)
	// exactly the tokens that may come next, end-of-generation tokens
	// included when the output may end here, and clears every other bit.
	FillMask(mask []uint32) error
	// Advance commits token t. A token the mask refuses is an error, and
	// the constraint stays as it was.
	Advance(t int) error
	// CanEnd reports whether the output so far is complete.
	CanEnd() bool
	// Snapshot returns a mark to Restore later: the number of tokens
	// advanced.
	Snapshot() int
	// Restore returns to a Snapshot taken earlier.
	Restore(mark int)
	// Clone returns an independent copy in the same state.
	Clone() Constraint
}

// MaskWords returns how many uint32 words a mask over n logits takes.
func MaskWords(n int) int { return (n + 31) / 32 }

// Automaton is a grammar bound to a vocabulary: the compiled grammar,
// the vocabulary's token trie, and the grammar's token terminals
// resolved to token ids. It is immutable and safe for concurrent use;
// NewMatcher gives each sequence its own state.
type Automaton struct {
	prog      *grammar.Prog
	vocab     *Vocab
	trie      *TokenTrie
	tokenSets [][]uint32 // per token set of the Prog: a bitset over the vocabulary
	eogMask   []uint32

	// masks caches, per parser state signature, the tokens accepted
	// whatever lies below the state, and the few whose fate depends on
	// it (XGrammar's context-independent and context-dependent tokens).
	mu    sync.RWMutex
	masks map[string]*stateMask
	// build serialises the computing of new state masks, which grows dfa.
	build sync.Mutex
	dfa   *grammar.LocalDFA
	// contexts keys whole parse states (at most maxContexts); cdDone
	// caches, under mu, the context-dependent tokens a whole state allows
	// (a state recurs at every character of a string, say), up to
	// cdCacheMax tokens.
	contexts grammar.ContextTable
	cdDone   map[uint32][]int32
	cdTokens int
}

// cdCacheMax bounds how many token ids an Automaton keeps in its cache
// of context-dependent results, and maxContexts how many whole states it
// keys: past either, context-dependent tokens are walked every time, so
// a long-lived automaton's memory stays bounded.
const (
	cdCacheMax  = 1 << 24
	maxContexts = 1 << 20
)

// stateMask is what a parser state allows, as far as it can be known
// from the state alone.
type stateMask struct {
	acc []uint32  // accepted in any context
	cd  *subtrees // to check against the actual context
}

// stateMask returns the cached masks of the matcher's current state,
// computing them on first use.
func (a *Automaton) stateMask(p *grammar.Parser, sigBuf []uint32) (*stateMask, []uint32) {
	sigBuf = p.Signature(sigBuf[:0])
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(sigBuf))), 4*len(sigBuf))
	a.mu.RLock()
	e := a.masks[key]
	a.mu.RUnlock()
	if e != nil {
		return e, sigBuf
	}
	a.build.Lock()
	defer a.build.Unlock()
	a.mu.RLock()
	e = a.masks[key]
	a.mu.RUnlock()
	if e != nil { // computed while this goroutine waited
		return e, sigBuf
	}
	e = &stateMask{acc: make([]uint32, MaskWords(a.vocab.Len()))}
	var cd []int32
	s0 := a.dfa.Start(p)
	walk := a.trie
	refused := 0 // a length of plain text that s0 refuses some of; 0 unknown
	for _, sl := range walk.slices {
		if refused > 0 && (sl.maxChars < 0 || sl.maxChars >= refused) {
			continue // cannot absorb: no need to look
		}
		ok, r := a.dfa.AbsorbsOrRefuses(s0, plainASCII, sl.maxChars)
		if ok {
			copy(e.acc, sl.bits)
			walk = sl.rest
			break
		}
		if r > 0 {
			refused = r
		}
	}
	walk.walkDFA(a.dfa, s0, func(tok int32) { e.acc[tok/32] |= 1 << (tok % 32) }, func(node int32) { cd = append(cd, node) })
	if len(cd) > 0 {
		e.cd = &subtrees{t: walk, roots: cd}
	}
	a.mu.Lock()
	if a.masks == nil {
		a.masks = map[string]*stateMask{}
	}
	a.masks[strings.Clone(key)] = e
	a.mu.Unlock()
	return e, sigBuf
}

// CachedStates returns how many parser states have cached masks.
func (a *Automaton) CachedStates() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.masks)
}

// NewAutomaton binds prog to vocabulary v, whose trie is t (shared by
// every grammar on v; build it once with NewTokenTrie). A token terminal
// that names no token of v is an error.
func NewAutomaton(prog *grammar.Prog, v *Vocab, t *TokenTrie) (*Automaton, error) {
	a := &Automaton{prog: prog, vocab: v, trie: t, eogMask: make([]uint32, MaskWords(v.Len())), dfa: grammar.NewLocalDFA(prog)}
	a.contexts.Max = maxContexts
	for _, id := range v.EOG() {
		a.eogMask[id/32] |= 1 << (id % 32)
	}
	for _, ts := range prog.TokenSets {
		set := make([]uint32, MaskWords(v.Len()))
		for _, ref := range ts.Tokens {
			id := ref.ID
			if ref.Text != "" {
				id = -1
				for t := range v.Len() {
					if v.Piece(t) == ref.Text {
						id = t
						break
					}
				}
				if id < 0 {
					return nil, fmt.Errorf("token %s: no such token in the vocabulary", ref.Text)
				}
			}
			if id < 0 || id >= v.Len() {
				return nil, fmt.Errorf("token %s: id outside the vocabulary of %d", ref, v.Len())
			}
			set[id/32] |= 1 << (id % 32)
		}
		if ts.Negated {
			for i := range set {
				set[i] = ^set[i] &^ a.eogMask[i]
			}
			if tail := v.Len() % 32; tail != 0 {
				set[len(set)-1] &= 1<<tail - 1
			}
		}
		a.tokenSets = append(a.tokenSets, set)
	}
	return a, nil
}

// Vocab returns the vocabulary the automaton is bound to.
func (a *Automaton) Vocab() *Vocab { return a.vocab }

// NewMatcher returns a matcher at the start of the grammar.
func (a *Automaton) NewMatcher() *Matcher {
	m := &Matcher{a: a, p: grammar.NewParser(a.prog)}
	m.allow = func(tok int32) {
		m.mask[tok/32] |= 1 << (tok % 32)
		m.allowed = append(m.allowed, tok)
	}
	return m
}

// RestoreWindow is how many tokens back a Matcher can Restore. Older
// parse state is compacted; keep an older state with Clone instead.
const RestoreWindow = 32

// Matcher is one sequence's position in an Automaton. It implements
// Constraint.
//
// Its state is the grammar parser's Earley sets. The sets of the last
// RestoreWindow tokens are kept whole, so Restore within the window is a
// truncation; older sets are compacted to the few items a later
// completion needs, so a long output keeps a small state.
type Matcher struct {
	a      *Automaton
	p      *grammar.Parser
	n      int     // tokens advanced
	bounds []int32 // parser length before each of the last tokens (at most RestoreWindow)
	ended  bool    // an end-of-generation token was advanced
	endAt  int     // len(steps) right after that token
	tok    int     // the token being tested by inSet
	sig    []uint32
	mask   []uint32 // the mask being filled, for allow
	allow  func(tok int32)
	// allowed collects the context-dependent tokens allow sets.
	allowed []int32
}

var _ Constraint = (*Matcher)(nil)

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
	var e *stateMask
	e, m.sig = m.a.stateMask(m.p, m.sig)
	clear(mask[copy(mask, e.acc):])
	if e.cd != nil {
		m.fillContextDependent(e.cd, mask)
	}
	m.p.WaitingTokenSets(func(set int) {
		for i, w := range m.a.tokenSets[set] {
			mask[i] |= w
		}
	})
	if m.p.CanEnd() {
		for i, w := range m.a.eogMask {
			mask[i] |= w
		}
	}
	return nil
}

// fillContextDependent sets the bits of the context-dependent tokens
// cd that the whole parse state allows: from the cache when this state
// was seen before, else by walking them through the parser.
func (m *Matcher) fillContextDependent(cd *subtrees, mask []uint32) {
	a := m.a
	key := m.p.ContextKey(&a.contexts)
	a.mu.RLock()
	toks, ok := a.cdDone[key]
	a.mu.RUnlock()
	if ok && key != 0 {
		for _, tok := range toks {
			mask[tok/32] |= 1 << (tok % 32)
		}
		return
	}
	m.mask, m.allowed = mask, m.allowed[:0]
	cd.walk(a.vocab, m.p, m.allow)
	if key == 0 {
		return // a state past maxContexts: not cached
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
	var text []byte
	if !v.Kind(t).Special() && v.Kind(t) != KindUnused {
		text = v.Bytes(t)
	}
	m.tok = t
	if !m.p.AdvanceToken(text, m.inSet) {
		return fmt.Errorf("token %d (%q) refused: expected %s", t, v.Bytes(t), m.p.Expected())
	}
	m.record(at)
	return nil
}

// record counts an advanced token that began at parser length at, keeps
// the last RestoreWindow boundaries, and commits the parser up to the
// oldest.
func (m *Matcher) record(at int) {
	m.bounds = append(m.bounds, int32(at))
	m.n++
	if extra := len(m.bounds) - RestoreWindow; extra > 0 {
		m.p.CommitTo(int(m.bounds[extra]))
		m.bounds = append(m.bounds[:0], m.bounds[extra:]...)
	}
}

// CanEnd reports whether the output may end here.
func (m *Matcher) CanEnd() bool { return m.ended || m.p.CanEnd() }

// Reset returns the matcher to the start of the grammar, keeping its
// buffers, so that one matcher can serve many outputs in turn.
func (m *Matcher) Reset() {
	m.p.Reset()
	m.n, m.bounds, m.ended, m.endAt = 0, m.bounds[:0], false, 0
}

// Snapshot returns the number of tokens advanced.
func (m *Matcher) Snapshot() int { return m.n }

// Restore returns to a snapshot at most RestoreWindow tokens back, by
// truncating the parser. Reaching further back panics: Clone the matcher
// to keep an older state.
func (m *Matcher) Restore(mark int) {
	back := m.n - mark
	if mark < 0 || back < 0 || back > len(m.bounds) {
		panic(fmt.Sprintf("decode: Restore(%d) with %d tokens advanced: a matcher restores at most %d tokens back (Clone it to keep older states)", mark, m.n, RestoreWindow))
	}
	if back == 0 {
		return
	}
	if m.ended && mark < m.endAt {
		m.ended, m.endAt = false, 0
	}
	m.p.Truncate(int(m.bounds[len(m.bounds)-back]))
	m.bounds = m.bounds[:len(m.bounds)-back]
	m.n = mark
}

// StateBytes returns the memory of the matcher's own state in bytes (the
// shared automaton excluded).
func (m *Matcher) StateBytes() int {
	return m.p.StateBytes() + 4*cap(m.bounds) + 4*cap(m.sig)
}

// Clone returns an independent matcher in the same state.
func (m *Matcher) Clone() Constraint {
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
// fast-forward works on tokens: see Options.Constraint.)
func (m *Matcher) Forced() []byte {
	if m.ended {
		return nil
	}
	var out []byte
	for !m.p.CanEnd() {
		next, tok := m.p.Next()
		if tok {
			break
		}
		only, n := -1, 0
		for w, bits := range next {
			for ; bits != 0; bits &= bits - 1 {
				only = w*64 + trailingZeros64(bits)
				n++
			}
		}
		if n != 1 || !m.p.Push(byte(only)) {
			break
		}
		out = append(out, byte(only))
	}
	m.p.Pop(len(out))
	return out
}

// Expected describes what may come next, for error messages.
func (m *Matcher) Expected() string { return m.p.Expected() }

// Parser exposes the byte-level parser, for tools that walk it.
func (m *Matcher) Parser() *grammar.Parser { return m.p }
