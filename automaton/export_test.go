package automaton

import (
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
)

// Parser exposes a matcher's byte-level parser to benchmarks that place
// it inside a string or a number without tokens.
func (m *Matcher) Parser() *earley.Parser { return m.p }

// Prog and Trie give benchmarks what a new automaton on the same grammar
// and vocabulary needs.
func (a *Automaton) Prog() *grammar.Prog { return a.prog }
func (a *Automaton) Trie() *Trie         { return a.trie }

// Plain makes the automaton walk every subtree itself, without the
// memo, context-dependent tokens with the parser alone, and each copy
// of a long repetition as a state of its own: the reference that tests
// compare the shortcuts' masks with.
func (a *Automaton) Plain() { a.walk.memo, a.parserOnly, a.canon = nil, true, nil }

// MemoEntries returns how many subtree walks the memo holds.
func (a *Automaton) MemoEntries() int { return len(a.memo.m) }

// ExactStates returns how many state masks took their plain-text
// tokens from an exact bound (Trie.upTo).
func (a *Automaton) ExactStates() int { return a.exact }

// StateBits returns the bitset of the matcher's current state mask, nil
// when it keeps a list instead.
func (m *Matcher) StateBits() []uint32 {
	return m.stateMask().bits
}

// SharedBits is sharedBits, for tests of its bound.
func (a *Automaton) SharedBits(bits []uint32) []uint32 { b, _ := a.sharedBits(bits); return b }

// ListedBytes returns the bytes of the automaton's listings and of its
// context table's.
func (a *Automaton) ListedBytes() (masks, contexts int) {
	return a.listedBytes, a.contexts.ListedBytes()
}

// MaxListedBytes is maxListedBytes, for tests.
const MaxListedBytes = maxListedBytes

// SetMaskWork sets the bound of a mask's parsing work (MaskWork).
func (a *Automaton) SetMaskWork(n int64) { a.maskWork = n }

// SetCacheBounds sets the bounds of the state mask cache and of the
// local view (maxMaskBytes, maxDFABytes); CacheResets counts the times
// either was emptied.
func (a *Automaton) SetCacheBounds(masks, dfa int) { a.maskBound, a.dfaBound = masks, dfa }
func (a *Automaton) CacheResets() int              { return a.resets }
