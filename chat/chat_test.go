package chat

import (
	"slices"
	"testing"
)

// TestTokenizeMarked: markers become their ids (the longest where two
// begin at one place), the text between is tokenized without BOS, and
// BOS comes first only when asked for.
func TestTokenizeMarked(t *testing.T) {
	const bos = -1
	bytes := func(text string, addSpecial bool) ([]int, error) {
		var out []int
		if addSpecial {
			out = append(out, bos)
		}
		for i := range len(text) {
			out = append(out, int(text[i]))
		}
		return out, nil
	}
	ids := map[string]int{"<|a|>": 1000, "<|a|>x": 1001, "<|b|>": 1002}
	for _, c := range []struct {
		text       string
		addSpecial bool
		want       []int
	}{
		{"hi", false, []int{'h', 'i'}},
		{"hi", true, []int{bos, 'h', 'i'}},
		{"<|a|>hi<|b|>", true, []int{bos, 1000, 'h', 'i', 1002}},
		{"<|a|>x<|a|>y", false, []int{1001, 1000, 'y'}},
		{"<|b|><|b|>", false, []int{1002, 1002}},
		{"", true, []int{bos}},
	} {
		got, err := TokenizeMarked(c.text, c.addSpecial, ids, bytes)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("TokenizeMarked(%q, %v) = %v, %v; want %v", c.text, c.addSpecial, got, err, c.want)
		}
	}
}
