package reins

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// JSONFor returns the constraint of JSON values that decode into a T
// with encoding/json: a JSON Schema derived from T's type, compiled with
// default JSONOptions. What the schema says:
//
//   - struct fields by their json tag names (a struct of up to six
//     fields takes them in any order, as the model writes them; a larger
//     one in field order); fields without omitempty are required,
//     with omitempty optional; no other keys; embedded structs are
//     flattened and fields that share a name resolved as encoding/json
//     does (the shallowest wins; at one depth the only tagged one, else
//     none); "-" and unexported fields are left out;
//   - bool, string, float32 and float64 (finite, in range), every integer
//     type within its range (an int8 is in [-128, 127]), so that decoding
//     never overflows;
//   - slices and arrays (an array has exactly its length), maps with
//     string keys, pointers (a value or null), []byte (base64),
//     time.Time (an RFC 3339 date-time it can parse), json.Number, any and json.RawMessage (any
//     JSON value); a type that refers to itself becomes a $ref;
//   - a `jsonschema:"..."` tag adds keywords: enum=A (repeat it for each
//     value), minimum=N, maximum=N, exclusiveMinimum=N,
//     exclusiveMaximum=N, minLength=N, maxLength=N, pattern=RE,
//     format=NAME, minItems=N, maxItems=N, title=T, description=D, with
//     `\,` for a comma inside a value. A bound narrows the type's range,
//     never widens it.
//
// Other types (channels, functions, complex numbers, maps with other
// keys, types with their own UnmarshalJSON) and unknown tag keys are
// errors. Keep the result to reuse it: it is compiled once.
func JSONFor[T any]() (*Constraint, error) {
	return jsonForType(reflect.TypeFor[T]())
}

func jsonForType(t reflect.Type) (*Constraint, error) {
	schema, err := schemaFor(t)
	if err != nil {
		return nil, err
	}
	c, err := JSONSchema(schema, nil)
	if err != nil {
		return nil, fmt.Errorf("reins: the schema of %s does not compile: %w\n%s", t, err, schema)
	}
	c.desc = "JSON schema of " + t.String()
	return c, nil
}

// schemaFor returns the JSON Schema of the values that decode into t.
func schemaFor(t reflect.Type) ([]byte, error) {
	r := &reflector{defs: map[reflect.Type]string{}, busy: map[reflect.Type]bool{}}
	root, err := r.schema(t, "")
	if err != nil {
		return nil, err
	}
	if len(r.order) > 0 {
		defs := object{}
		for _, name := range r.order {
			defs = append(defs, member{name, r.bodies[name]})
		}
		root = append(object{{"$defs", defs}}, root...)
	}
	return json.Marshal(root)
}

// object is a JSON object whose keys keep their order.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// reflector derives schemas; struct types go to $defs, so that a type
// that refers to itself needs no infinite schema.
type reflector struct {
	defs   map[reflect.Type]string // struct type → its $defs name
	busy   map[reflect.Type]bool   // struct types being derived
	order  []string                // $defs names in order
	bodies map[string]object
}

// rfc3339 is the date-times time.Time decodes: RFC 3339 with an upper
// case T and Z, seconds up to 59, and days that exist in their month
// (February 29 left out, which exists only in leap years).
const rfc3339 = `^[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))` +
	`T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`

var (
	timeType        = reflect.TypeFor[time.Time]()
	numberType      = reflect.TypeFor[json.Number]()
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// schema returns the schema of t; at names where t sits, for errors.
func (r *reflector) schema(t reflect.Type, at string) (object, error) {
	where := func() string {
		if at == "" {
			return t.String()
		}
		return at + " (" + t.String() + ")"
	}
	switch t {
	case timeType:
		return object{{"type", "string"}, {"pattern", rfc3339}}, nil
	case numberType:
		return object{{"type", "number"}}, nil
	case rawType:
		return object{}, nil
	}
	if t.Kind() != reflect.Pointer && (t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textType) || reflect.PointerTo(t).Implements(textType)) {
		return nil, fmt.Errorf("reins: JSONFor: %s decodes itself (UnmarshalJSON or UnmarshalText): reins cannot know its JSON shape; give a schema with JSONSchema", where())
	}
	switch t.Kind() {
	case reflect.Bool:
		return object{{"type", "boolean"}}, nil
	case reflect.String:
		return object{{"type", "string"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return object{{"type", "integer"}, {"minimum", json.Number(strconv.FormatInt(math.MinInt64>>(64-bits), 10))},
			{"maximum", json.Number(strconv.FormatInt(math.MaxInt64>>(64-bits), 10))}}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return object{{"type", "integer"}, {"minimum", json.Number("0")},
			{"maximum", json.Number(strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10))}}, nil
	case reflect.Float32:
		return object{{"type", "number"}, {"minimum", json.Number("-3.4028234663852886e38")}, {"maximum", json.Number("3.4028234663852886e38")}}, nil
	case reflect.Float64:
		return object{{"type", "number"}, {"minimum", json.Number("-1.7976931348623157e308")}, {"maximum", json.Number("1.7976931348623157e308")}}, nil
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return nil, fmt.Errorf("reins: JSONFor: %s is an interface with methods: encoding/json cannot decode into it", where())
		}
		return object{}, nil
	case reflect.Pointer:
		elem, err := r.schema(t.Elem(), at)
		if err != nil {
			return nil, err
		}
		return object{{"anyOf", []any{elem, object{{"type", "null"}}}}}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType) {
			return object{{"type", "string"}, {"pattern", `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`}}, nil
		}
		items, err := r.schema(t.Elem(), at+"[]")
		if err != nil {
			return nil, err
		}
		return object{{"type", "array"}, {"items", items}}, nil
	case reflect.Array:
		items, err := r.schema(t.Elem(), at+"[]")
		if err != nil {
			return nil, err
		}
		return object{{"type", "array"}, {"items", items}, {"minItems", t.Len()}, {"maxItems", t.Len()}}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("reins: JSONFor: %s has %s keys: only string keys are supported", where(), t.Key())
		}
		values, err := r.schema(t.Elem(), at+"[key]")
		if err != nil {
			return nil, err
		}
		return object{{"type", "object"}, {"additionalProperties", values}}, nil
	case reflect.Struct:
		return r.structRef(t)
	}
	return nil, fmt.Errorf("reins: JSONFor: %s: a %s cannot be decoded from JSON", where(), t.Kind())
}

// structRef derives a struct type into $defs once and refers to it.
func (r *reflector) structRef(t reflect.Type) (object, error) {
	name, ok := r.defs[t]
	if !ok {
		base := defName(t)
		name = base
		for n := 2; r.taken(name); n++ {
			name = fmt.Sprintf("%s%d", base, n)
		}
		r.defs[t] = name
		r.busy[t] = true
		body, err := r.structSchema(t)
		if err != nil {
			return nil, err
		}
		delete(r.busy, t)
		if r.bodies == nil {
			r.bodies = map[string]object{}
		}
		r.bodies[name] = body
		r.order = append(r.order, name)
	}
	return object{{"$ref", "#/$defs/" + name}}, nil
}

// defName names a struct type in $defs: its name, with what a JSON
// pointer or a reader would trip on (a generic type's "[pkg/path.T]")
// made underscores; "struct" for an anonymous struct.
func defName(t reflect.Type) string {
	name := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, t.Name())
	if name == "" {
		return "struct"
	}
	return name
}

func (r *reflector) taken(name string) bool {
	for _, n := range r.defs {
		if n == name {
			return true
		}
	}
	return false
}

// structSchema derives an object schema from a struct's fields, as
// encoding/json sees them.
func (r *reflector) structSchema(t reflect.Type) (object, error) {
	fields, err := jsonFields(t)
	if err != nil {
		return nil, err
	}
	props := object{}
	var required []string
	for _, f := range fields {
		at := t.Name() + "." + f.Name
		s, err := r.schema(f.Type, at)
		if err != nil {
			return nil, err
		}
		if tag, ok := f.Tag.Lookup("jsonschema"); ok {
			if s, err = withTag(s, f.Type, tag, at); err != nil {
				return nil, err
			}
		}
		props = append(props, member{f.name, s})
		if !f.optional {
			required = append(required, f.name)
		}
	}
	out := object{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		out = append(out, member{"required", required})
	}
	return append(out, member{"additionalProperties", false}), nil
}

// jsonField is a field encoding/json decodes into: its JSON name, and
// where it sits (index, through embedded structs).
type jsonField struct {
	reflect.StructField
	name     string
	tagged   bool // the name is the json tag's
	optional bool // omitempty or omitzero
	index    []int
}

// jsonFields returns the fields encoding/json decodes into from a
// struct, in its order, by its rules: embedded structs without a tag
// name are flattened, breadth first; of the fields that share a name,
// the shallowest wins, and at equal depth the only tagged one, else
// none of them.
func jsonFields(t reflect.Type) ([]jsonField, error) {
	type scan struct {
		t     reflect.Type
		index []int
	}
	var fields []jsonField
	next := []scan{{t: t}}
	visited := map[reflect.Type]bool{}
	var count map[reflect.Type]int // how often each struct of this depth is embedded
	for len(next) > 0 {
		current := next
		next = nil
		nextCount := map[reflect.Type]int{}
		for _, s := range current {
			if visited[s.t] {
				continue // embedded again deeper: the shallower one's fields win
			}
			visited[s.t] = true
			for i := range s.t.NumField() {
				sf := s.t.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !jsonTagName(name) {
					name = "" // encoding/json ignores such a name and uses the field's
				}
				index := append(slices.Clone(s.index), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					if sf.Type.Kind() == reflect.Pointer && !sf.IsExported() {
						return nil, fmt.Errorf("reins: JSONFor: %s embeds *%s, a pointer to an unexported struct, which encoding/json cannot set", s.t, ft)
					}
					if nextCount[ft]++; nextCount[ft] == 1 {
						next = append(next, scan{t: ft, index: index})
					}
					continue
				}
				f := jsonField{StructField: sf, name: name, tagged: name != "", index: index}
				if name == "" {
					f.name = sf.Name
				}
				for o := range strings.SplitSeq(opts, ",") {
					switch o {
					case "omitempty", "omitzero":
						f.optional = true
					case "string":
						return nil, fmt.Errorf("reins: JSONFor: field %s.%s: the json tag's \",string\" option is not supported", s.t.Name(), sf.Name)
					}
				}
				fields = append(fields, f)
				if count[s.t] > 1 {
					// The same struct embedded twice at this depth: its
					// fields collide with themselves and are dropped.
					fields = append(fields, f)
				}
			}
		}
		count = nextCount
	}
	return dominantFields(fields), nil
}

// dominantFields keeps, of the fields that share a name, the one
// encoding/json decodes into (if any), and returns them in index order.
func dominantFields(fields []jsonField) []jsonField {
	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		i = j
		// The first is the shallowest, tagged first; it wins unless
		// another at its depth is as good.
		if len(group) > 1 && len(group[1].index) == len(group[0].index) && group[1].tagged == group[0].tagged {
			continue
		}
		out = append(out, group[0])
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// withTag adds the keywords of a jsonschema struct tag to schema s of a
// field of type t.
func withTag(s object, t reflect.Type, tag, at string) (object, error) {
	var enum []any
	for _, kv := range splitTag(tag) {
		key, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("reins: JSONFor: field %s: tag item %q: want key=value", at, kv)
		}
		switch key {
		case "enum":
			v, err := tagValue(t, val)
			if err != nil {
				return nil, fmt.Errorf("reins: JSONFor: field %s: enum value %q: %w", at, val, err)
			}
			enum = append(enum, v)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			bound, ok := new(big.Rat).SetString(val)
			if !ok || !json.Valid([]byte(val)) || strings.ContainsAny(val, `"[{tfn`) {
				return nil, fmt.Errorf("reins: JSONFor: field %s: %s=%q: want a number", at, key, val)
			}
			if key == "minimum" || key == "maximum" {
				// The type's own range stays: the tag can only narrow it.
				if old, ok := get(s, key).(json.Number); ok {
					if have, ok := new(big.Rat).SetString(string(old)); ok && (key == "minimum") == (have.Cmp(bound) > 0) {
						continue
					}
				}
			}
			s = set(s, key, json.Number(val))
		case "minLength", "maxLength", "minItems", "maxItems":
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				return nil, fmt.Errorf("reins: JSONFor: field %s: %s=%q: want a count", at, key, val)
			}
			s = set(s, key, n)
		case "pattern", "format", "title", "description":
			s = set(s, key, val)
		default:
			return nil, fmt.Errorf("reins: JSONFor: field %s: unknown jsonschema tag key %q (want enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, format, minItems, maxItems, title, description)", at, key)
		}
	}
	if enum != nil {
		s = set(s, "enum", enum)
	}
	return s, nil
}

// get returns key's value in s, or nil.
func get(s object, key string) any {
	for _, m := range s {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// set puts key in s, replacing an earlier value.
func set(s object, key string, v any) object {
	for i := range s {
		if s[i].key == key {
			s[i].value = v
			return s
		}
	}
	return append(s, member{key, v})
}

// splitTag splits a tag at commas not escaped as `\,`.
func splitTag(tag string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			cur.WriteByte(',')
			i++
		case tag[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(tag[i])
		}
	}
	return append(out, cur.String())
}

// tagValue reads an enum value for a field of type t: a string field
// takes it as written, others as JSON.
func tagValue(t reflect.Type, val string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.String {
		return val, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(val))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON value for a %s field", t)
	}
	return v, nil
}

// jsonTagName reports whether encoding/json takes name, a json tag's
// first part, as a key: letters, digits, and the punctuation it allows
// (not quotes, backslashes or commas).
func jsonTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", r) {
			return false
		}
	}
	return true
}
