package automaton

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
	"github.com/reins-go/reins/vocab"
)

// MaskWords returns how many uint32 words a mask over n logits takes.
func MaskWords(n int) int { return (n + 31) / 32 }

// Automaton is a grammar bound to a vocabulary: the compiled grammar,
// the vocabulary's token trie, and the grammar's token terminals
// resolved to token ids. It is immutable and safe for concurrent use;
// NewMatcher gives each sequence its own state.
type Automaton struct {
	prog      *grammar.Prog
	vocab     *vocab.Vocab
	trie      *Trie
	tokenSets [][]uint32 // per token set of the Prog: a bitset over the vocabulary, shared by sets alike
	// tokenSetBytes is what the distinct token sets take.
	tokenSetBytes int
	eog           []int     // the vocabulary's end-of-generation tokens
	singles       [4]uint64 // the bytes that are a token by themselves
	// preds are the local view's (dfa's) predictions, which every
	// Matcher's parser shares: read without build, unlike dfa.
	preds *earley.Predictions

	// masks caches, per parser state signature, the tokens accepted
	// whatever lies below the state, and the few whose fate depends on
	// it (XGrammar's context-independent and context-dependent tokens).
	mu    sync.RWMutex
	masks map[string]*stateMask
	// listed holds, under mu, the state masks by listing (the items in
	// the order a parser holds them, earley.Parser.Listing), so that a
	// step listed as one before is found without sorting its signature.
	listed      map[string]*stateMask
	listedBytes int // the listings' bytes, at most maxListedBytes
	maskBytes   int // about what masks holds, at most maxMaskBytes
	// maskBound and dfaBound are maxMaskBytes and maxDFABytes, less in
	// tests; resets counts the times either cache was emptied.
	maskBound, dfaBound, resets int
	// tokenCosts prices the ways to finish in tokens, built on first use
	// (see budget.go).
	costsOnce  sync.Once
	tokenCosts *earley.Costs
	costsBytes atomic.Int64 // tokenCosts' once built, for CacheBytes
	// build serialises the computing of new state masks, which grows dfa.
	build sync.Mutex
	dfa   *earley.LocalDFA
	// dfaBytes is what dfa and the walk memo took when the last build
	// ended, read without build by CacheBytes.
	dfaBytes atomic.Int64
	walk     dfaWalk // under build
	memo     walkMemo
	cdRoots  []int32
	// parserOnly makes walkContextDependent walk with the parser alone
	// (for tests that compare).
	parserOnly bool
	// contexts keys whole parse states (at most maxContexts); cdDone
	// caches, under mu, the context-dependent tokens a whole state allows
	// (a state recurs at every character of a string, say), up to
	// cdCacheMax tokens.
	contexts earley.ContextTable
	// canon maps each instruction to the one whose states' masks it
	// shares: an instruction of a long bounded repetition's copy that
	// allows more repetitions than the longest token has bytes counts as
	// the copy's that allows just that many (see grammar.RepeatCopies), so
	// that a long string's characters, say, share one state mask instead
	// of computing one each. nil when the program has no such copies.
	canon    []uint32
	cdDone   map[uint32][]int32
	cdTokens int
	// bitsets holds the states' bitsets by hash (under build): states
	// that allow the same tokens share one (see sharedBits).
	bitsets map[uint64][][]uint32
	bitsBuf []uint32 // scratch for a state's bitset, under build
	// maskWork bounds a mask's parsing work: MaskWork, less in tests.
	maskWork int64
	// exact counts the state masks taken from Trie.upTo, for tests.
	exact int
}

// cdCacheMax bounds how many token ids an Automaton keeps in its cache
// of context-dependent results, and maxContexts how many whole states it
// keys: past either, context-dependent tokens are walked every time, so
// a long-lived automaton's memory stays bounded.
const (
	cdCacheMax  = 1 << 24
	maxContexts = 1 << 20
)

// maxMaskBytes bounds the memory of an Automaton's cached state masks,
// and maxDFABytes its local view's (earley.LocalDFA): past either, that
// cache is emptied and fills again. Grammars whose parse counts (text a
// fixed number of characters after some other, ".*a.{250}") reach a new
// state at nearly every token, each with its own mask and a LocalDFA
// grown by a walk of the whole vocabulary: without the bounds one such
// constraint took gigabytes in a few hundred tokens. Over MaskBench's
// dev set no automaton's masks passed 8 MB, nor its local view 32 MB.
const (
	maxMaskBytes = 32 << 20
	maxDFABytes  = 64 << 20
)

// stateMask is what a parser state allows, as far as it can be known
// from the state alone: the tokens accepted in any context, kept as the
// smaller of a list and a bitset (XGrammar's choice), and those left to
// check against the actual context (cd).
type stateMask struct {
	base []uint32 // a text slice's tokens (shared by every state that takes it), or nil
	toks []int32  // the other accepted tokens, when they are few
	bits []uint32 // every accepted token, when they are many (then base and toks are nil)
	cd   *subtrees
}

// denseAt is the number of listed tokens from which a state keeps a
// bitset instead: setting that many bits one by one, scattered, costs
// about what copying a Llama-3-sized bitset (16 KB) does when it is in
// cache.
const denseAt = 256

// fill writes the accepted tokens over mask.
func (e *stateMask) fill(mask []uint32) {
	switch {
	case e.bits != nil:
		clear(mask[copy(mask, e.bits):])
	case e.base != nil:
		clear(mask[copy(mask, e.base):])
	default:
		clear(mask)
	}
	for _, t := range e.toks {
		mask[t/32] |= 1 << (t % 32)
	}
}

// sharedBits returns a bitset equal to bits that another state already
// has, or a copy of bits, which it keeps for the states to come (up to
// maxSameHash under one hash). Different states often allow the same
// tokens (a number at any of an object's members, say, when no token
// reaches the next member's name), and a bitset that many states share
// is more likely to be in cache when a mask copies it: MaskBench's
// median mask is about a tenth faster.
func (a *Automaton) sharedBits(bits []uint32) (shared []uint32, copied bool) {
	h := bitsHash(bits)
	same := a.bitsets[h]
	for _, b := range same {
		if slices.Equal(b, bits) {
			return b, false
		}
	}
	bits = slices.Clone(bits)
	if len(same) < maxSameHash {
		if a.bitsets == nil {
			a.bitsets = map[uint64][][]uint32{}
		}
		a.bitsets[h] = append(same, bits)
	}
	return bits, true
}

// maxSameHash bounds how many bitsets sharedBits keeps under one hash,
// so that bitsets its sample cannot tell apart cost a few comparisons,
// not one per state.
const maxSameHash = 4

// bitsHash hashes every eighth word of bits: an eighth of the cost of
// hashing them all, and enough to tell most masks apart (equal hashes
// are compared whole).
func bitsHash(bits []uint32) uint64 {
	h := uint64(len(bits))
	for i := 0; i < len(bits); i += 8 {
		h = (h ^ uint64(bits[i])) * 0x100000001b3
	}
	return h ^ h>>29
}

// listedMask returns the state mask of a step whose items
// earley.Parser.Listing listed as listing, when a step listed so was
// seen before; nil otherwise.
func (a *Automaton) listedMask(listing []uint32) *stateMask {
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(listing))), 4*len(listing))
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.listed[key]
}

// addListedMask records the state mask of steps listed as listing,
// while the listings hold at most maxListedBytes.
func (a *Automaton) addListedMask(listing []uint32, e *stateMask) {
	a.mu.RLock()
	full := a.listedBytes+4*len(listing) > maxListedBytes
	a.mu.RUnlock()
	if full {
		return
	}
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(listing))), 4*len(listing))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.listedBytes+len(key) > maxListedBytes {
		return
	}
	if a.listed == nil {
		a.listed = map[string]*stateMask{}
	}
	if _, ok := a.listed[key]; !ok {
		a.listed[strings.Clone(key)] = e
		a.listedBytes += len(key)
	}
}

// maxListedBytes bounds the listings an Automaton remembers, in bytes:
// a grammar whose sets grow with the input (x ::= "a" x y | "a") lists
// a longer set at every step, under one signature.
const maxListedBytes = 4 << 20

// stateMask returns the cached masks of p's current state, whose
// signature (earley.Parser.Listing, sorted and without repeats) is sig,
// computing them on first use.
func (a *Automaton) stateMask(p *earley.Parser, sig []uint32) *stateMask {
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(sig))), 4*len(sig))
	a.mu.RLock()
	e := a.masks[key]
	a.mu.RUnlock()
	if e != nil {
		return e
	}
	a.build.Lock()
	defer a.endBuild()
	a.mu.RLock()
	e = a.masks[key]
	a.mu.RUnlock()
	if e != nil { // computed while this goroutine waited
		return e
	}
	e = &stateMask{}
	a.boundDFA()
	s0 := a.dfa.Start(p)
	walk := a.trie
	refused := 0 // a length of plain text that s0 refuses some of; 0 unknown
	for _, sl := range walk.slices {
		if refused > 0 && (sl.maxChars < 0 || sl.maxChars >= refused) {
			continue // cannot absorb: no need to look
		}
		ok, r := a.dfa.AbsorbsOrRefuses(s0, plainASCII, sl.maxChars)
		if ok {
			e.base = sl.bits
			walk = sl.rest
			break
		}
		if r > 0 {
			refused = r
		}
	}
	// Inside a string of at most n more characters, the plain-text
	// tokens are known: those of at most n characters. Only the others
	// are walked (the first slice's rest), where a bounded slice's rest
	// holds every longer plain-text token too, and no slice all of them.
	// (refused is known only when the first slice, of any length, did
	// not absorb.)
	if n := refused - 1; n >= 1 && n <= maxExact && a.dfa.ExactlyAbsorbs(s0, plainASCII, n) {
		e.base, walk = a.trie.upTo[n], a.trie.slices[0].rest
		a.exact++
	}
	w := &a.walk
	w.t, w.acc, w.cd = walk, w.acc[:0], w.cd[:0]
	w.run(s0)
	size := 0 // the bytes the entry adds to the cache
	if len(w.acc) < denseAt {
		e.toks = slices.Clone(w.acc)
	} else {
		bits := slices.Grow(a.bitsBuf[:0], MaskWords(a.vocab.Len()))[:MaskWords(a.vocab.Len())]
		clear(bits[copy(bits, e.base):])
		for _, t := range w.acc {
			bits[t/32] |= 1 << (t % 32)
		}
		a.bitsBuf = bits
		var copied bool
		e.bits, copied = a.sharedBits(bits)
		e.base = nil
		if copied {
			size += 4 * len(e.bits)
		}
	}
	if len(w.cd) > 0 {
		e.cd = &subtrees{t: walk, roots: slices.Clone(w.cd)}
	}
	size += len(key) + 4*len(e.toks) + 64
	if e.cd != nil {
		size += 4 * len(e.cd.roots)
	}
	a.mu.Lock()
	if a.maskBytes+size > a.maskBound {
		// Start again: the states to come will fill it.
		a.masks, a.listed, a.listedBytes, a.maskBytes = nil, nil, 0, 0
		a.resets++
		a.bitsets = nil // under build, which this goroutine holds
	}
	if a.masks == nil {
		a.masks = map[string]*stateMask{}
	}
	a.masks[strings.Clone(key)] = e
	a.maskBytes += size
	a.mu.Unlock()
	return e
}

// boundDFA empties the local view and the walk memo keyed by its states
// once the view holds more than dfaBound. It is called under build,
// before a walk takes any state of the view: none is held across it.
func (a *Automaton) boundDFA() {
	if a.dfa.Bytes() > a.dfaBound {
		a.dfa.Reset()
		a.memo = walkMemo{}
		a.resets++
	}
}

// endBuild notes the local view's size, and its walk memo's, for
// CacheBytes and releases build.
func (a *Automaton) endBuild() {
	a.dfaBytes.Store(int64(a.dfa.Bytes() + 4*a.memo.toks + 64*len(a.memo.m)))
	a.build.Unlock()
}

// CacheBytes returns about the memory the automaton holds besides its
// program, the vocabulary and the trie: the caches that grow as it is
// used (state masks, the local view, context-dependent results, whole
// parse states), each bounded on its own, its token sets, and the token
// costs of its instructions once a budget asked for them. A caller
// that keeps many automata (a server's cache of constraints) can bound
// them together by this.
func (a *Automaton) CacheBytes() int64 {
	n := 4*int64(len(a.canon)) + int64(a.tokenSetBytes)
	a.mu.RLock()
	n += int64(a.maskBytes+a.listedBytes) + 4*int64(a.cdTokens)
	a.mu.RUnlock()
	return n + a.dfaBytes.Load() + a.costsBytes.Load() + int64(a.contexts.Bytes())
}

// walkContextDependent calls allow for each token of cd that the parse
// p accepts. The parser is pushed to each subtree's root; below it, the
// parser's local view there (a LocalDFA state, with its transitions and
// memo shared by every walk) decides what it can, and the parser walks
// only the subtrees the local view leaves to context again. Without the
// automaton's build lock (another goroutine builds a state), the parser
// walks all of it.
func (a *Automaton) walkContextDependent(cd *subtrees, p *earley.Parser, allow func(tok int32)) {
	if a.parserOnly || !a.build.TryLock() {
		cd.walk(a.vocab, p, 0, allow, nil)
		return
	}
	defer a.endBuild()
	a.boundDFA()
	t := cd.t
	w := &a.walk
	var path []byte // the path to the previous root, whose parser state...
	s0 := int32(-1) // ...is s0 as the local view sees it
	cd.walk(a.vocab, p, 0, allow, func(r int32) {
		rn := &t.nodes[r]
		base := int(rn.depth) - 1
		// Sibling roots share their parser state: look it up once.
		if want := a.vocab.Bytes(int(t.toks[rn.tokStart]))[:base]; s0 < 0 || string(want) != string(path) {
			path, s0 = want, a.dfa.Start(p)
		}
		w.t, w.acc, w.cd = t, w.acc[:0], w.cd[:0]
		w.sizeStack()
		w.walk(int(r), int(r)+int(rn.size), base, s0, false, w.memo != nil)
		for _, tok := range w.acc {
			allow(tok)
		}
		if len(w.cd) > 0 {
			a.cdRoots = append(a.cdRoots[:0], w.cd...)
			(&subtrees{t: t, roots: a.cdRoots}).walk(a.vocab, p, base, allow, nil)
		}
	})
}

// canonRepeats returns the instruction map of Automaton.canon for a
// vocabulary whose longest token has maxBytes bytes, or nil. From a copy
// that allows at least maxBytes more repetitions, every token's text
// parses alike whatever the copy: none can use more repetitions than it
// has bytes, so no copy's bound is reached within a token.
func canonRepeats(p *grammar.Prog, maxBytes int) []uint32 {
	var canon []uint32
	for _, r := range p.Repeats {
		// Copy k allows k+1 more; copies from c on are alike.
		c := max(int64(maxBytes)-1, 0)
		if c+1 >= int64(r.Copies) {
			continue
		}
		if canon == nil {
			canon = make([]uint32, len(p.Inst))
			for pc := range canon {
				canon[pc] = uint32(pc)
			}
		}
		base := r.Start + uint32(c)*r.Len
		for pc := base + r.Len; pc < r.Start+r.Copies*r.Len; pc++ {
			canon[pc] = base + (pc-base)%r.Len
		}
	}
	return canon
}

// CachedStates returns how many parser states have cached masks.
func (a *Automaton) CachedStates() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.masks)
}

// New binds prog to vocabulary v, whose trie is t (shared by every
// grammar on v; build it once with NewTrie). A token terminal that names
// no token of v, or asks for an end-of-generation token (generation ends
// on it: the output may end wherever the grammar does), is an error.
func New(prog *grammar.Prog, v *vocab.Vocab, t *Trie) (*Automaton, error) {
	a := &Automaton{prog: prog, vocab: v, trie: t, eog: v.EOG(), dfa: earley.NewLocalDFA(prog), maskWork: MaskWork,
		maskBound: maxMaskBytes, dfaBound: maxDFABytes}
	a.preds = a.dfa.Predictions()
	a.walk = dfaWalk{d: a.dfa, v: v, memo: &a.memo}
	a.canon = canonRepeats(prog, t.maxDepth)
	a.contexts.Max = maxContexts
	a.singles = t.singles
	var byPiece map[string]int // the vocabulary's tokens by piece, made for the first token named by text
	distinct := map[string][]uint32{}
	for _, ts := range prog.TokenSets {
		set := make([]uint32, MaskWords(v.Len()))
		for _, ref := range ts.Tokens {
			id := ref.ID
			if ref.Text != "" {
				if byPiece == nil {
					byPiece = make(map[string]int, v.Len())
					for t := v.Len() - 1; t >= 0; t-- { // the lowest id of a piece wins
						byPiece[v.Piece(t)] = t
					}
				}
				var ok bool
				if id, ok = byPiece[ref.Text]; !ok {
					return nil, fmt.Errorf("token %s: no such token in the vocabulary", ref.Text)
				}
			}
			if id < 0 || id >= v.Len() {
				return nil, fmt.Errorf("token %s: id outside the vocabulary of %d", ref, v.Len())
			}
			if !ts.Negated && v.IsEOG(id) {
				// Generation ends on it: asked for, it could only end the
				// output before the grammar does.
				return nil, fmt.Errorf("token %s (%q) ends generation: a grammar cannot ask for it (the output may end wherever the grammar does)", ref, v.Piece(id))
			}
			set[id/32] |= 1 << (id % 32)
		}
		if ts.Negated {
			for i := range set {
				set[i] = ^set[i]
			}
			for _, id := range a.eog {
				set[id/32] &^= 1 << (id % 32)
			}
			if tail := v.Len() % 32; tail != 0 {
				set[len(set)-1] &= 1<<tail - 1
			}
		}
		// Sets alike are shared; the others are bounded together.
		key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(set))), 4*len(set))
		if same, ok := distinct[key]; ok {
			set = same
		} else {
			distinct[key] = set
			a.tokenSetBytes += 4 * len(set)
			if a.tokenSetBytes > maxTokenSetBytes {
				return nil, fmt.Errorf("the grammar's token terminals make more than %d different sets of tokens, which take more than %d MB over this vocabulary of %d tokens", len(distinct)-1, maxTokenSetBytes>>20, v.Len())
			}
		}
		a.tokenSets = append(a.tokenSets, set)
	}
	return a, nil
}

// maxTokenSetBytes bounds the bitsets of a grammar's distinct token
// sets: each takes a bit per token of the vocabulary (16 KB on
// Llama-3's), and a grammar of a few KB can name thousands.
const maxTokenSetBytes = 64 << 20

// Vocab returns the vocabulary the automaton is bound to.
func (a *Automaton) Vocab() *vocab.Vocab { return a.vocab }

// NewMatcher returns a matcher at the start of the grammar.
func (a *Automaton) NewMatcher() *Matcher {
	m := &Matcher{a: a, p: earley.NewParser(a.prog)}
	m.p.SetPredictions(a.preds)
	m.allow = func(tok int32) {
		m.mask[tok/32] |= 1 << (tok % 32)
		m.allowed = append(m.allowed, tok)
	}
	return m
}

// NewMatcherAfter returns a matcher past prefix: at the start of what
// may follow prefix in the language (a prefill, text decided before the
// generation). It is an error when no text of the language begins with
// prefix.
func (a *Automaton) NewMatcherAfter(prefix []byte) (*Matcher, error) {
	m := a.NewMatcher()
	for i, b := range prefix {
		if !m.p.Push(b) {
			return nil, fmt.Errorf("no output begins with the %d bytes given: byte %d (%q) is refused; expected %s", len(prefix), i, b, m.p.Expected())
		}
		m.p.Commit()
	}
	return m, nil
}
