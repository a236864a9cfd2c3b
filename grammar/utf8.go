package grammar

import "unicode/utf8"

// byteRange is an inclusive range of byte values.
type byteRange struct{ lo, hi byte }

// utf8Sequences returns the byte-range sequences whose concatenations are
// exactly the UTF-8 encodings of the code points in [lo, hi], surrogates
// excluded. Each sequence has one range per byte of the encoding.
func utf8Sequences(lo, hi rune) [][]byteRange {
	var out [][]byteRange
	var split func(lo, hi rune)
	split = func(lo, hi rune) {
		if lo > hi {
			return
		}
		// Surrogates have no UTF-8 encoding.
		if lo < 0xD800 && hi >= 0xD800 {
			split(lo, 0xD7FF)
			split(0xE000, hi)
			return
		}
		if lo >= 0xD800 && lo <= 0xDFFF {
			split(0xE000, hi)
			return
		}
		// One encoding length per range.
		for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
			if lo <= b && hi > b {
				split(lo, b)
				split(b+1, hi)
				return
			}
		}
		n := utf8.RuneLen(lo)
		// Each continuation position must span a whole aligned block.
		for i := 1; i < n; i++ {
			m := rune(1)<<(6*i) - 1
			if lo&^m != hi&^m {
				if lo&m != 0 {
					split(lo, lo|m)
					split((lo|m)+1, hi)
					return
				}
				if hi&m != m {
					split(lo, (hi&^m)-1)
					split(hi&^m, hi)
					return
				}
			}
		}
		var a, z [4]byte
		utf8.EncodeRune(a[:], lo)
		utf8.EncodeRune(z[:], hi)
		seq := make([]byteRange, n)
		for i := range n {
			seq[i] = byteRange{a[i], z[i]}
		}
		out = append(out, seq)
	}
	split(lo, hi)
	return out
}
