package reins

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type jsonForInner struct {
	N int16 `json:"n"`
}

type jsonForSample struct {
	Name    string            `json:"name" jsonschema:"minLength=1,maxLength=5,pattern=^[a-z]+$"`
	Kind    string            `json:"kind" jsonschema:"enum=a,enum=b\\,c"`
	Small   int8              `json:"small"`
	Count   uint              `json:"count,omitempty"`
	Ratio   float32           `json:"ratio"`
	OK      bool              `json:"ok"`
	Inner   jsonForInner      `json:"inner"`
	Ptr     *jsonForInner     `json:"ptr"`
	List    []jsonForInner    `json:"list,omitempty" jsonschema:"maxItems=2"`
	Pair    [2]bool           `json:"pair"`
	Tags    map[string]string `json:"tags,omitempty"`
	Raw     []byte            `json:"raw,omitempty"`
	Any     any               `json:"any,omitempty"`
	When    time.Time         `json:"when"`
	Skip    int               `json:"-"`
	private int
	jsonForEmbedded
}

type jsonForEmbedded struct {
	Extra string `json:"extra,omitempty"`
}

func TestJSONForSchema(t *testing.T) {
	schema, err := schemaFor(reflect.TypeFor[jsonForSample]())
	require.NoError(t, err)
	want := `{"$defs":{"jsonForSample":{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"maxLength":5,"pattern":"^[a-z]+$"},` +
		`"kind":{"type":"string","enum":["a","b,c"]},` +
		`"small":{"type":"integer","minimum":-128,"maximum":127},` +
		`"count":{"type":"integer","minimum":0,"maximum":18446744073709551615},` +
		`"ratio":{"type":"number","minimum":-3.4028234663852886e38,"maximum":3.4028234663852886e38},` +
		`"ok":{"type":"boolean"},` +
		`"inner":{"$ref":"#/$defs/jsonForInner"},` +
		`"ptr":{"anyOf":[{"$ref":"#/$defs/jsonForInner"},{"type":"null"}]},` +
		`"list":{"type":"array","items":{"$ref":"#/$defs/jsonForInner"},"maxItems":2},` +
		`"pair":{"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2},` +
		`"tags":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"raw":{"type":"string","pattern":"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"},` +
		`"any":{},` +
		`"when":{"type":"string","pattern":` + strconv.Quote(rfc3339) + `},` +
		`"extra":{"type":"string"}},` +
		`"required":["name","kind","small","ratio","ok","inner","ptr","pair","when"],"additionalProperties":false},` +
		`"jsonForInner":{"type":"object","properties":{"n":{"type":"integer","minimum":-32768,"maximum":32767}},"required":["n"],"additionalProperties":false}},` +
		`"$ref":"#/$defs/jsonForSample"}`
	assert.JSONEq(t, want, string(schema))
}

// TestGenerateJSONDecodes: every output decodes into the Go type, at a
// temperature that tries the edges (integer ranges, dates, base64).
func TestGenerateJSONDecodes(t *testing.T) {
	m := Builtin()
	for seed := range uint64(12) {
		v, out, err := GenerateJSON[jsonForSample](context.Background(), m, "{", Options{Temperature: 1.5, Seed: seed, MaxTokens: 400})
		require.NoError(t, err, "seed %d", seed)
		var again jsonForSample
		require.NoError(t, json.Unmarshal([]byte(out.Text), &again))
		assert.Equal(t, again, v)
		assert.Contains(t, []string{"a", "b,c"}, v.Kind)
		assert.LessOrEqual(t, len(v.List), 2)
	}
	c, err := m.jsonFor(reflect.TypeFor[jsonForSample]())
	require.NoError(t, err)
	c2, err := m.jsonFor(reflect.TypeFor[jsonForSample]())
	require.NoError(t, err)
	assert.Same(t, c, c2, "compiled once per model and type")
}

type jsonForTree struct {
	Label string        `json:"label"`
	Kids  []jsonForTree `json:"kids" jsonschema:"maxItems=2"`
}

func TestJSONForRecursiveType(t *testing.T) {
	v, _, err := GenerateJSON[jsonForTree](context.Background(), Builtin(), "x", Options{Temperature: 1, Seed: 1})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(v.Kids), 2)
}

type jsonForText struct{ time.Duration }

func (*jsonForText) UnmarshalText([]byte) error { return nil }

func TestJSONForRefusals(t *testing.T) {
	for name, f := range map[string]func() error{
		"chan":         func() error { _, err := JSONFor[struct{ C chan int }](); return err },
		"func":         func() error { _, err := JSONFor[func()](); return err },
		"complex":      func() error { _, err := JSONFor[complex128](); return err },
		"int keys":     func() error { _, err := JSONFor[map[int]string](); return err },
		"method iface": func() error { _, err := JSONFor[error](); return err },
		"unmarshaler":  func() error { _, err := JSONFor[jsonForText](); return err },
		"string option": func() error {
			_, err := JSONFor[struct {
				N int `json:"n,string"`
			}]()
			return err
		},
		"unknown key": func() error {
			_, err := JSONFor[struct {
				N int `jsonschema:"multipleOf=2"`
			}]()
			return err
		},
		"bad number": func() error {
			_, err := JSONFor[struct {
				N int `jsonschema:"minimum=x"`
			}]()
			return err
		},
		"bad enum": func() error {
			_, err := JSONFor[struct {
				N int `jsonschema:"enum=x"`
			}]()
			return err
		},
	} {
		assert.Error(t, f(), name)
	}
	// The integer ranges hold: 128 is no int8.
	c, err := JSONFor[struct {
		S int8 `json:"s"`
	}]()
	require.NoError(t, err)
	assert.NoError(t, c.Match([]byte(`{"s":-128}`)))
	assert.Error(t, c.Match([]byte(`{"s":128}`)))
}

// Field shadowing, as encoding/json resolves it.
type (
	jsonForDeep struct {
		Name  string
		Deep  int
		Twice string
	}
	jsonForMid struct {
		jsonForDeep
		Name  string // shadows jsonForDeep.Name
		Tied  int
		Other int `json:"Twice"` // shadows jsonForDeep.Twice, by tag
	}
	jsonForTieA   struct{ Tied, OnlyA int }
	jsonForTieB   struct{ Tied, OnlyB int }
	jsonForTagged struct {
		X int `json:"x"`
	}
	jsonForUntagged struct{ X int }
	jsonForShadows  struct {
		Top int
		jsonForMid
		jsonForTieA // Tied is at depth 1 twice: both dropped
		jsonForTieB
		jsonForTagged // "x" and "X" are different names
		jsonForUntagged
		*JSONForSelf
	}
	JSONForSelf struct {
		*JSONForSelf // embeds itself: no endless walk
		Self         int
	}
	jsonForSameDepthTag struct {
		jsonForTagA
		jsonForTagB
	}
	jsonForTagA struct {
		V int `json:"v"`
	}
	jsonForTagB  struct{ V int }
	jsonForTwice struct {
		jsonForA2
		jsonForB2
	}
	jsonForA2 struct{ jsonForDeep }
	jsonForB2 struct{ jsonForDeep }
)

// TestJSONForFieldsAsEncodingJSON: the object schema's properties are
// exactly the keys encoding/json writes for the type, in its order, for
// embedded structs that shadow each other (shallowest wins, a tag breaks
// a tie at one depth, else both go) and one that embeds itself.
func TestJSONForFieldsAsEncodingJSON(t *testing.T) {
	for _, v := range []any{jsonForShadows{JSONForSelf: &JSONForSelf{}}, jsonForSameDepthTag{}, jsonForTwice{}, jsonForSample{}, jsonForOddTags{}} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			var want []string
			dec := json.NewDecoder(bytes.NewReader(b))
			_, _ = dec.Token()
			for dec.More() {
				k, err := dec.Token()
				require.NoError(t, err)
				want = append(want, k.(string))
				var skip json.RawMessage
				require.NoError(t, dec.Decode(&skip))
			}
			fields, err := jsonFields(typ)
			require.NoError(t, err)
			var got []string
			for _, f := range fields {
				if f.optional && !slices.Contains(want, f.name) {
					continue // omitempty: not written for a zero value
				}
				got = append(got, f.name)
			}
			assert.Equal(t, want, got)
			_, err = jsonForType(typ)
			require.NoError(t, err)
		})
	}
	var pointer struct{ *jsonForUnexported }
	_, err := jsonForType(reflect.TypeOf(pointer))
	assert.ErrorContains(t, err, "pointer to an unexported struct")
}

type jsonForUnexported struct{ A int }

// jsonForOddTags has json tag names encoding/json refuses (it uses the
// field's name instead) beside ones it takes.
type jsonForOddTags struct {
	Quote     int `json:"it's"`
	Backslash int `json:"a\\b"`
	Comma     int `json:",omitempty"`
	Punct     int `json:"a-b.c:d"`
	Unicode   int `json:"größe"`
	Space     int `json:"a b"`
	DQuote    int `json:"say\"hi\""`
}

type jsonForPair[K comparable, V any] struct {
	Key   K `json:"key"`
	Value V `json:"value"`
}

// TestJSONForGenericNames: generic struct types get $defs names a JSON
// pointer can carry, distinct per instantiation.
func TestJSONForGenericNames(t *testing.T) {
	type both struct {
		A jsonForPair[string, int]         `json:"a"`
		B jsonForPair[string, jsonForDeep] `json:"b"`
	}
	schema, err := schemaFor(reflect.TypeFor[both]())
	require.NoError(t, err)
	var s struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(schema, &s))
	assert.Len(t, s.Defs, 4, "%s", schema)
	for name := range s.Defs {
		assert.Regexp(t, `^[A-Za-z0-9_.-]+$`, name)
	}
	c, err := JSONFor[both]()
	require.NoError(t, err)
	assert.NoError(t, c.Match([]byte(`{"a":{"key":"k","value":1},"b":{"key":"k","value":{"Name":"","Deep":0,"Twice":""}}}`)))
}

// TestJSONForTagBoundsNarrowOnly: a tag's minimum or maximum narrows
// the type's range and never widens it past what decodes.
func TestJSONForTagBoundsNarrowOnly(t *testing.T) {
	c, err := JSONFor[struct {
		Wide   int8  `json:"wide" jsonschema:"maximum=1000,minimum=-1000"`
		Narrow int8  `json:"narrow" jsonschema:"maximum=5,minimum=-5"`
		U      uint8 `json:"u" jsonschema:"minimum=-3"`
	}]()
	require.NoError(t, err)
	assert.NoError(t, c.Match([]byte(`{"wide":127,"narrow":5,"u":0}`)))
	assert.Error(t, c.Match([]byte(`{"wide":128,"narrow":5,"u":0}`)), "int8 holds no 128 whatever the tag says")
	assert.Error(t, c.Match([]byte(`{"wide":-129,"narrow":5,"u":0}`)))
	assert.Error(t, c.Match([]byte(`{"wide":0,"narrow":6,"u":0}`)))
	assert.Error(t, c.Match([]byte(`{"wide":0,"narrow":-6,"u":0}`)))
	assert.Error(t, c.Match([]byte(`{"wide":0,"narrow":0,"u":-1}`)))
}
