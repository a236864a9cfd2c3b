package pyjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDumps(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,false,null,"x"]}`, `{"b": 1, "a": [true, false, null, "x"]}`},
		{`{"s":"é\"\\\n\u0001\u2028"}`, "{\"s\": \"é\\\"\\\\\\n\\u0001\u2028\"}"},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{` 1.50 `, `1.50`},
		{`[{"a":{}},[[]]]`, `[{"a": {}}, [[]]]`},
	}
	for _, tt := range tests {
		got, err := Dumps([]byte(tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got)
	}
	_, err := Dumps([]byte(`{"a":1} x`))
	assert.Error(t, err)
}
