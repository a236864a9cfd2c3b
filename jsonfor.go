package reins

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// JSONFor returns the constraint of JSON values that decode into a T
// with encoding/json: a JSON Schema derived from T's type, compiled with
// default JSONOptions. What the schema says:
//
//   - struct fields by their json tag names, in field order (outputs
//     write them in that order); fields without omitempty are required,
//     with omitempty optional; no other keys; embedded structs are
//     flattened as encoding/json does; "-" and unexported fields are
//     left out;
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
//     `\,` for a comma inside a value.
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
		return object{{"type", "integer"}, {"minimum", 0},
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
		name = t.Name()
		if name == "" {
			name = "struct"
		}
		for n := 2; r.taken(name); n++ {
			name = fmt.Sprintf("%s%d", t.Name(), n)
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
	props := object{}
	var required []string
	seen := map[string]bool{}
	err := r.fields(t, t.Name(), func(name string, f reflect.StructField, optional bool) error {
		if seen[name] {
			return nil // a shallower field of the same name wins, as in encoding/json
		}
		seen[name] = true
		s, err := r.schema(f.Type, t.Name()+"."+f.Name)
		if err != nil {
			return err
		}
		if tag, ok := f.Tag.Lookup("jsonschema"); ok {
			if s, err = withTag(s, f.Type, tag, t.Name()+"."+f.Name); err != nil {
				return err
			}
		}
		props = append(props, member{name, s})
		if !optional {
			required = append(required, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := object{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		out = append(out, member{"required", required})
	}
	return append(out, member{"additionalProperties", false}), nil
}

// fields calls fn for each field encoding/json decodes into, embedded
// structs flattened, in order.
func (r *reflector) fields(t reflect.Type, at string, fn func(name string, f reflect.StructField, optional bool) error) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if err := r.fields(et, at, fn); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty", "omitzero":
				optional = true
			case "string":
				return fmt.Errorf("reins: JSONFor: field %s.%s: the json tag's \",string\" option is not supported", at, f.Name)
			}
		}
		if err := fn(name, f, optional); err != nil {
			return err
		}
	}
	return nil
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
			if !json.Valid([]byte(val)) || strings.ContainsAny(val, `"[{tfn`) {
				return nil, fmt.Errorf("reins: JSONFor: field %s: %s=%q: want a number", at, key, val)
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
