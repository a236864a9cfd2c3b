package remote

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestShapeCounts checks that Shape counts the containers and entries of
// a JSON text, not the braces and commas inside its strings (escaped
// quotes included), and refuses past either bound.
func TestShapeCounts(t *testing.T) {
	text := `{"a": [1, 2, {"b": "x,{[\"],"}], "c\\": "{,"}`
	assert.NoError(t, Shape{Containers: 3, Values: 3}.check([]byte(text)))
	assert.ErrorContains(t, Shape{Containers: 2}.check([]byte(text)), "more than 2 objects and arrays")
	assert.ErrorContains(t, Shape{Values: 2}.check([]byte(text)), "more than 2 values")
	assert.NoError(t, Shape{}.check([]byte(strings.Repeat("[{},", 1000))), "no bound")
}

// TestReportsError: an "error" field that is absent, null, false, empty
// or an empty object reports nothing; a message, an object or true does.
func TestReportsError(t *testing.T) {
	for _, raw := range []string{"", "null", "false", `""`, "{}", "{ }"} {
		assert.False(t, ReportsError([]byte(raw)), raw)
	}
	for _, raw := range []string{`"busy"`, `{"message":"x"}`, "true", "1", `[]`} {
		assert.True(t, ReportsError([]byte(raw)), raw)
	}
}
