package earley

// keySet is a set of uint64 keys that empties in constant time: each
// slot carries the generation that wrote it, and Reset starts a new
// generation. The parsers use it to deduplicate the items of the set
// being built.
type keySet struct {
	slots []keySlot
	gen   uint32
	n     int // keys in the current generation
}

type keySlot struct {
	key uint64
	gen uint32
}

// Reset empties the set.
func (s *keySet) Reset() {
	if s.slots == nil {
		s.slots = make([]keySlot, 256)
	}
	s.n = 0
	s.gen++
	if s.gen == 0 { // wrapped: clear the stamps
		clear(s.slots)
		s.gen = 1
	}
}

// Add adds key and reports whether it was new.
func (s *keySet) Add(key uint64) bool {
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	h := (key * 0x9E3779B97F4A7C15) >> 32
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.gen != s.gen {
			sl.key, sl.gen = key, s.gen
			s.n++
			return true
		}
		if sl.key == key {
			return false
		}
	}
}

// Has reports whether key is in the set.
func (s *keySet) Has(key uint64) bool {
	if len(s.slots) == 0 {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	h := (key * 0x9E3779B97F4A7C15) >> 32
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.gen != s.gen {
			return false
		}
		if sl.key == key {
			return true
		}
	}
}

// grow doubles the table, keeping the current generation's keys.
func (s *keySet) grow() {
	old := s.slots
	s.slots = make([]keySlot, 2*len(old))
	mask := uint64(len(s.slots) - 1)
	for _, sl := range old {
		if sl.gen != s.gen {
			continue
		}
		h := (sl.key * 0x9E3779B97F4A7C15) >> 32
		for i := h & mask; ; i = (i + 1) & mask {
			if s.slots[i].gen != s.gen {
				s.slots[i] = sl
				break
			}
		}
	}
}

// Len returns the number of keys in the set.
func (s *keySet) Len() int { return s.n }

// Bytes returns the memory the set occupies.
func (s *keySet) Bytes() int { return 16 * cap(s.slots) }

// pcStamps is a set of instructions that empties in constant time, as
// keySet does, but indexed by instruction: LocalDFA keeps in one the
// items of the state being built whose rule began at that state (the
// predictions, most items), and in a keySet the others, which saves the
// hashing of most lookups (the parser's itemSet does the same for every
// origin).
type pcStamps struct {
	gen []uint32 // per instruction: the generation that added it
	cur uint32
}

// reset empties the set, for a program of n instructions.
func (s *pcStamps) reset(n int) { nextGeneration(&s.gen, &s.cur, n) }

// nextGeneration starts a new generation cur of a table of n stamps,
// which empties it: made anew when its size changes, cleared when the
// generation wraps.
func nextGeneration[T any](stamps *[]T, cur *uint32, n int) {
	if len(*stamps) != n {
		*stamps, *cur = make([]T, n), 0
	}
	*cur++
	if *cur == 0 { // wrapped: clear the stamps
		clear(*stamps)
		*cur = 1
	}
}

// add adds pc and reports whether it was new.
func (s *pcStamps) add(pc uint32) bool {
	if s.gen[pc] == s.cur {
		return false
	}
	s.gen[pc] = s.cur
	return true
}

// has reports whether pc is in the set.
func (s *pcStamps) has(pc uint32) bool { return s.gen[pc] == s.cur }

// itemSet is a set of items (instruction, origin) that empties in
// constant time: the first origin added at each instruction is kept by
// instruction, as pcStamps keeps its instructions, and any other origin
// in a keySet. A set being built seldom reaches one instruction from two
// origins, so most lookups hash nothing.
type itemSet struct {
	first []pcOrigin // per instruction
	cur   uint32
	more  keySet
}

// pcOrigin is the generation that added an instruction to an itemSet,
// and with which origin.
type pcOrigin struct{ gen, origin uint32 }

// reset empties the set, for a program of n instructions.
func (s *itemSet) reset(n int) {
	nextGeneration(&s.first, &s.cur, n)
	s.more.Reset()
}

// add adds item (pc, origin) and reports whether it was new.
func (s *itemSet) add(pc, origin uint32) bool {
	f := &s.first[pc]
	switch {
	case f.gen != s.cur:
		*f = pcOrigin{gen: s.cur, origin: origin}
		return true
	case f.origin == origin:
		return false
	}
	return s.more.Add(uint64(pc)<<32 | uint64(origin))
}

// Bytes returns the memory the set occupies.
func (s *itemSet) Bytes() int { return 8*cap(s.first) + s.more.Bytes() }
