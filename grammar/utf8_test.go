package grammar

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUTF8SequencesCoverExactly(t *testing.T) {
	for _, r := range [][2]rune{{0, 0x10FFFF}, {0x7F, 0x80}, {0x7FF, 0x800}, {0xD7FF, 0xE000}, {0x10000, 0x10FFFF}, {0x41, 0x5A}, {0xFFFF, 0x10000}} {
		n := 0
		for _, seq := range utf8Sequences(r[0], r[1]) {
			count := 1
			for _, br := range seq {
				count *= int(br.hi-br.lo) + 1
			}
			n += count
		}
		want := int(r[1]-r[0]) + 1
		if r[0] <= 0xD800 && r[1] >= 0xDFFF {
			want -= 0x800
		}
		assert.Equal(t, want, n, "%x-%x", r[0], r[1])
	}
}
