package grammar

import "unsafe"

// ruleIndex finds a rule's index by its name, for the references
// compile resolves: scan, productivity and compile look each up, tens
// of thousands of times in a large schema's grammar, and a map lookup
// hashes the name every time (3 to 4% of compiling a schema).
//
// In front of the map is a small cache keyed by where the name's bytes
// are: a front end writes the same string value into every reference to
// a rule (grammar.Ref(name) with the rule's own name), so most lookups
// find the string they saw before and hash nothing. The same pointer and
// length are the same bytes, strings being immutable, so a hit is always
// right; a name spelled in other storage misses and goes to the map.
type ruleIndex struct {
	byName map[string]int
	recent [ruleIndexSlots]ruleIndexSlot
}

// ruleIndexSlots is the cache's size.
const (
	ruleIndexBits  = 8
	ruleIndexSlots = 1 << ruleIndexBits
)

type ruleIndexSlot struct {
	data *byte // the name's bytes, kept alive by the slot
	len  int
	rule int
}

// newRuleIndex makes an index for n rules.
func newRuleIndex(n int) *ruleIndex {
	return &ruleIndex{byName: make(map[string]int, n)}
}

// add records rule i's name, and reports false if a rule has it already.
func (x *ruleIndex) add(name string, i int) bool {
	if _, dup := x.byName[name]; dup {
		return false
	}
	x.byName[name] = i
	return true
}

// find returns the index of the rule named name.
func (x *ruleIndex) find(name string) (int, bool) {
	data := unsafe.StringData(name)
	// Fibonacci hashing of the address: names of a few bytes share
	// 16-byte blocks, which its low bits alone would not tell apart.
	slot := &x.recent[uint64(uintptr(unsafe.Pointer(data)))*0x9e3779b97f4a7c15>>(64-ruleIndexBits)]
	if slot.data == data && slot.len == len(name) && data != nil {
		return slot.rule, true
	}
	i, ok := x.byName[name]
	if ok {
		*slot = ruleIndexSlot{data, len(name), i}
	}
	return i, ok
}

// of is find for a name known to be defined (scan has checked every
// reference).
func (x *ruleIndex) of(name string) int {
	i, _ := x.find(name)
	return i
}
