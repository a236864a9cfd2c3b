package jsonschema

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// TestMultipleOf checks multipleOf on integers and numbers.
func TestMultipleOf(t *testing.T) {
	runKeywordCases(t, []keywordCase{
		{
			name:    "an integer multiple, unbounded",
			schema:  `{"type": "integer", "multipleOf": 12}`,
			valid:   []string{`0`, `12`, `-24`, `1200`, `36.0`},
			invalid: []string{`6`, `13`, `-12.5`, `1.5`},
		},
		{
			name:    "an integer multiple in a range, written out",
			schema:  `{"type": "integer", "minimum": -2032, "maximum": 2031, "multipleOf": 16}`,
			valid:   []string{`-2032`, `0`, `16`, `2016`},
			invalid: []string{`2032`, `-2048`, `8`},
		},
		{
			name:    "multiples of 7 from 2 on",
			schema:  `{"multipleOf": 7, "minimum": 2}`,
			valid:   []string{`7`, `14`, `700`, `"x"`},
			invalid: []string{`0`, `-7`, `8`},
		},
		{
			name:    "cents in a range",
			schema:  `{"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 99999999999.99}`,
			valid:   []string{`0`, `1.5`, `19.99`, `99999999999.99`},
			invalid: []string{`1.001`, `-0.01`, `100000000000`},
		},
		{
			name:    "quarters",
			schema:  `{"type": "number", "multipleOf": 0.25}`,
			valid:   []string{`0.25`, `-1.75`, `3`, `2.5`, `0.50`},
			invalid: []string{`0.1`, `1.2`, `0.125`},
		},
		{
			name:    "numbers that are whole",
			schema:  `{"type": "number", "multipleOf": 1.0, "minimum": 1, "maximum": 5}`,
			valid:   []string{`1`, `5`, `3.0`},
			invalid: []string{`1.5`, `0`, `6`},
		},
	})
}

// FuzzMultipleOf checks the multipleOf automaton against exact
// arithmetic: a numeral it accepts is a multiple within the bounds.
func FuzzMultipleOf(f *testing.F) {
	f.Add(int64(25), uint8(2), int64(0), true, "0.75")
	f.Add(int64(7), uint8(0), int64(2), true, "14")
	f.Add(int64(3), uint8(1), int64(-1), false, "-0.3")
	f.Fuzz(func(t *testing.T, p int64, k uint8, lo int64, bounded bool, text string) {
		if p <= 0 || p > 1000 || k > 4 || lo < -50 || lo > 50 {
			return
		}
		q := new(big.Rat).SetFrac(big.NewInt(p), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
		schema := fmt.Sprintf(`{"type": "number", "multipleOf": %s}`, q.FloatString(int(k)))
		if bounded {
			schema = fmt.Sprintf(`{"type": "number", "multipleOf": %s, "minimum": %d}`, q.FloatString(int(k)), lo)
		}
		g, err := Compile([]byte(schema), Options{})
		if err != nil {
			return
		}
		prog, err := grammar.Compile(g)
		require.NoError(t, err)
		if acceptsText(prog, text) {
			assert.NoError(t, Validate([]byte(schema), []byte(text)), "%s accepts %s", schema, text)
		}
		// And some multiples are accepted or refused only by the bounds.
		for i := int64(-3); i <= 3; i++ {
			v := new(big.Rat).Mul(q, big.NewRat(i, 1))
			s := v.FloatString(int(k))
			if acceptsText(prog, s) {
				assert.NoError(t, Validate([]byte(schema), []byte(s)), "%s accepts %s", schema, s)
			}
		}
	})
}
