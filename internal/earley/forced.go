package earley

import "math/bits"

// Forced returns the bytes that are the only way on from the current
// step: each the one byte the grammar allows next, while the input
// cannot end and no token terminal waits. It leaves the parser as it was.
func (ps *Parser) Forced() []byte {
	var out []byte
	for !ps.CanEnd() {
		next, tok := ps.Next()
		if tok {
			break
		}
		only, n := -1, 0
		for w, word := range next {
			for ; word != 0; word &= word - 1 {
				only = w*64 + bits.TrailingZeros64(word)
				n++
			}
		}
		if n != 1 || !ps.Push(byte(only)) {
			break
		}
		out = append(out, byte(only))
	}
	ps.Pop(len(out))
	return out
}
