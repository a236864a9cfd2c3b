package earley

import (
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// ContextTable interns whole parse states for Parser.ContextKey. It is
// safe for concurrent use; parsers of one Prog share it so that their
// keys compare.
type ContextTable struct {
	// Max bounds how many keys the table holds, and how many listings
	// of them; 0 is no bound. The keys also take at most maxKeyBytes,
	// and the listings maxListedBytes, so that a long-lived table's
	// memory stays bounded whatever the size of its states. Once it is
	// full, states it does not hold get no key.
	Max int

	mu       sync.Mutex
	ids      map[string]uint32
	keyBytes int // the keys' bytes, at most maxKeyBytes
	// listed maps a set's pairs as a parser listed them, unsorted, with
	// the calls-only flag last, to their key's id: a state met again in
	// the same order costs a lookup, not a sort and a lookup (MaskBench's
	// median mask is about 3% faster).
	listed      map[string]uint32
	listedBytes int // the listings' bytes, at most maxListedBytes
}

// ListedBytes returns the bytes of the listings the table holds.
func (t *ContextTable) ListedBytes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listedBytes
}

// Bytes returns about the memory the table holds: its keys and
// listings, with a map entry's overhead each.
func (t *ContextTable) Bytes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keyBytes + t.listedBytes + entryBytes*(len(t.ids)+len(t.listed))
}

// entryBytes is about what a map entry of a string to an id takes
// besides the string's bytes.
const entryBytes = 48

// lookupListed returns the id of the listed pairs, 0 when unknown.
func (t *ContextTable) lookupListed(listed []uint64) uint32 {
	s := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(listed))), 8*len(listed))
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listed[s]
}

// addListed records that the listed pairs have key id; t.mu is held.
func (t *ContextTable) addListed(listed []uint64, id uint32) {
	s := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(listed))), 8*len(listed))
	if t.Max > 0 && len(t.listed) >= t.Max || t.listedBytes+len(s) > maxListedBytes {
		return
	}
	if t.listed == nil {
		t.listed = map[string]uint32{}
	}
	t.listed[strings.Clone(s)] = id
	t.listedBytes += len(s)
}

// maxListedBytes bounds a table's listings, in bytes: a grammar whose
// sets grow with the input (x ::= "a" x y | "a") lists a longer set at
// every step.
const maxListedBytes = 8 << 20

// maxKeyBytes bounds a table's keys, in bytes: a state's key holds its
// items, and a grammar whose parse counts (".*a.{400}") can hold
// hundreds in each of the many states it reaches.
const maxKeyBytes = 32 << 20

// intern returns key's id, or 0 when the table is full and key is new,
// and records listed, the pairs as a parser listed them, under the id.
func (t *ContextTable) intern(key []uint32, listed []uint64) uint32 {
	s := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(key))), 4*len(key))
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.ids[s]
	if !ok {
		if t.Max > 0 && len(t.ids) >= t.Max || t.keyBytes+len(s) > maxKeyBytes {
			return 0
		}
		if t.ids == nil {
			t.ids = map[string]uint32{}
		}
		id = uint32(len(t.ids) + 1)
		t.ids[strings.Clone(s)] = id
		t.keyBytes += len(s)
	}
	t.addListed(listed, id)
	return id
}

// ContextKey returns a key of the whole parse state at the current
// step: the current set's items, and, through their origins, the call
// items every completion can return to, transitively. Two states with
// the same key (from the same table) accept exactly the same
// continuations, so a result computed for one holds for the other. The
// keys of earlier steps are remembered, so a step costs about its own
// items. It is 0, no key, for a state a full table does not hold.
func (ps *Parser) ContextKey(t *ContextTable) uint32 {
	if ps.ctxTab != t {
		ps.ctxTab = t
		ps.ctxLive, ps.ctxCommitted = ps.ctxLive[:0], ps.ctxCommitted[:0]
		ps.ctxLast = 0
	}
	return ps.setKey(ps.top(), false)
}

// setKey interns set i: all its items, or with callsOnly (as an origin)
// its call items, each with its origin's key (0 for this set itself).
// It is 0 when the table is full and holds neither.
func (ps *Parser) setKey(i int, callsOnly bool) uint32 {
	memo := ps.keyMemo(i)
	if callsOnly && memo != nil && *memo != 0 {
		return *memo
	}
	items := ps.set(i)
	if callsOnly {
		items = ps.callsOf(i)
	}
	// This set's pairs go on ctxPairs after those of the sets whose keys
	// are being built around it (the origins recurse), and leave with it.
	start := len(ps.ctxPairs)
	defer func() { ps.ctxPairs = ps.ctxPairs[:start] }()
	for _, it := range items {
		var ref uint32
		if int(it.origin) != i {
			if ref = ps.setKey(int(it.origin), true); ref == 0 {
				return 0 // an origin has no key: neither has this set
			}
		}
		ps.ctxPairs = append(ps.ctxPairs, uint64(it.pc)<<32|uint64(ref))
	}
	pairs := ps.ctxPairs[start:]
	if !callsOnly && ps.ctxLast != 0 && slices.Equal(pairs, ps.ctxLastPairs) {
		return ps.ctxLast // the state the last key was of, its items in the same order
	}
	if !callsOnly {
		ps.ctxLastPairs = append(ps.ctxLastPairs[:0], pairs...)
		ps.ctxLast = 0 // set below, when the table holds the key
	}
	flag := uint64(0)
	if callsOnly {
		flag = 1
	}
	ps.ctxPairs = append(ps.ctxPairs, flag)
	listed := ps.ctxPairs[start:]
	id := ps.ctxTab.lookupListed(listed)
	if id == 0 {
		id = ps.intern(listed, callsOnly)
	}
	if callsOnly {
		if memo = ps.keyMemo(i); memo != nil { // the recursion may have grown the memo
			*memo = id
		}
	} else {
		ps.ctxLast = id
	}
	return id
}

// intern returns the id of a set's pairs as listed (the pairs, then
// the calls-only flag), which it leaves as they are: the id of the
// pairs as a set, which the table records the listing under; 0 when
// the table is full.
func (ps *Parser) intern(listed []uint64, callsOnly bool) uint32 {
	pairs := append(ps.ctxSorted[:0], listed[:len(listed)-1]...)
	ps.ctxSorted = pairs
	slices.Sort(pairs)
	pairs = slices.Compact(pairs)
	key := ps.ctxBuf[:0]
	if callsOnly {
		key = append(key, 1)
	} else {
		key = append(key, 0)
	}
	for _, p := range pairs {
		key = append(key, uint32(p>>32), uint32(p))
	}
	ps.ctxBuf = key
	return ps.ctxTab.intern(key, listed)
}

// keyMemo returns where the call-items key of set i is remembered, or
// nil for a committed set without call items.
func (ps *Parser) keyMemo(i int) *uint32 {
	if i >= int(ps.base) {
		k := i - int(ps.base)
		for len(ps.ctxLive) <= k {
			ps.ctxLive = append(ps.ctxLive, 0)
		}
		return &ps.ctxLive[k]
	}
	j, found := slices.BinarySearch(ps.cSet, uint32(i))
	if !found {
		return nil
	}
	for len(ps.ctxCommitted) <= j {
		ps.ctxCommitted = append(ps.ctxCommitted, 0)
	}
	return &ps.ctxCommitted[j]
}
