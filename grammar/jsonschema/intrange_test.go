package jsonschema

import (
	"math/big"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/earley"
)

func accepts(t *testing.T, n *grammar.Node, s string) bool {
	t.Helper()
	p, err := grammar.Compile(&grammar.Grammar{Start: "root", Rules: []grammar.Rule{{Name: "root", Body: n}}})
	require.NoError(t, err)
	ps := earley.NewParser(p)
	for i := 0; i < len(s); i++ {
		if !ps.Push(s[i]) {
			return false
		}
	}
	return ps.CanEnd()
}

func TestIntRangeExhaustive(t *testing.T) {
	bi := func(v int64) *big.Int { return big.NewInt(v) }
	cases := [][2]*big.Int{{bi(0), bi(9)}, {bi(5), bi(123)}, {bi(-17), bi(4)}, {bi(-250), bi(-3)}, {bi(99), bi(100)}, {bi(7), nil}, {nil, bi(-12)}, {nil, bi(30)}, {bi(-5), nil}, {bi(0), bi(0)}, {bi(100), bi(1999)}}
	for _, c := range cases {
		n := intRange(c[0], c[1])
		for v := int64(-400); v <= 2100; v++ {
			in := (c[0] == nil || v >= c[0].Int64()) && (c[1] == nil || v <= c[1].Int64())
			got := accepts(t, n, strconv.FormatInt(v, 10))
			require.Equal(t, in, got, "range [%v, %v], value %d", c[0], c[1], v)
		}
		require.False(t, accepts(t, n, "-0"))
		require.False(t, accepts(t, n, "007"))
	}
}

func TestIntRangeStaysSmall(t *testing.T) {
	hi, _ := new(big.Int).SetString("9223372036854776000", 10)
	n := intRange(big.NewInt(0), hi)
	assert.Less(t, nodes(n), 2000, "linear in the number of digits")
	assert.True(t, accepts(t, n, "9223372036854775999"))
	assert.False(t, accepts(t, n, "9223372036854776001"))
}

func nodes(n *grammar.Node) int {
	s := 1
	for _, c := range n.Subs {
		s += nodes(c)
	}
	return s
}
