package reins

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// GenerateJSON generates a JSON value after prompt and decodes it into a
// T. The constraint is opts.Constraint when set (a JSON constraint whose
// values decode into T), else JSONFor[T]() (compiled once per model and
// type). The completion comes back too: its text, every token's
// logprobs, and the parsed value. With opts.Prefill, the value decoded
// is Prefill+Text.
func GenerateJSON[T any](ctx context.Context, m *Model, prompt string, opts Options) (T, *Completion, error) {
	var v T
	if opts.Constraint == nil {
		c, err := m.jsonFor(reflect.TypeFor[T]())
		if err != nil {
			return v, nil, err
		}
		opts.Constraint = c
	} else if opts.Constraint.json == nil {
		return v, nil, fmt.Errorf("reins: GenerateJSON needs a JSON constraint, not a %s", opts.Constraint.desc)
	}
	c, err := m.Generate(ctx, prompt, opts)
	if err != nil {
		return v, c, err
	}
	if err := json.NewDecoder(strings.NewReader(c.Prefill + c.Text)).Decode(&v); err != nil {
		return v, c, fmt.Errorf("reins: the output does not decode into a %T: %w", v, err)
	}
	return v, c, nil
}

// jsonFor returns JSONFor's constraint for t, compiled once per model.
func (m *Model) jsonFor(t reflect.Type) (*Constraint, error) {
	m.jsonMu.Lock()
	defer m.jsonMu.Unlock()
	if c, ok := m.jsonTypes[t]; ok {
		return c, nil
	}
	c, err := jsonForType(t)
	if err != nil {
		return nil, err
	}
	if m.jsonTypes == nil {
		m.jsonTypes = map[reflect.Type]*Constraint{}
	}
	m.jsonTypes[t] = c
	return c, nil
}
