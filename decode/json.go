package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
)

// JSONSchema is a JSON Schema compiled and bound to a vocabulary, ready
// to constrain generations to JSON that validates against it. It is
// immutable and safe for concurrent use.
type JSONSchema struct {
	validator *jsonschema.Validator
	a         *Automaton
	relaxed   []string // opts.Relax: keywords the grammar does not enforce
}

// NewJSONSchema compiles schema (nil for any JSON value) with opts and
// binds it to vocabulary v with its trie t. For generation, set
// opts.Bounded, so that every output ends by itself (see
// jsonschema.Options).
func NewJSONSchema(schema []byte, opts jsonschema.Options, v *Vocab, t *TokenTrie) (*JSONSchema, error) {
	if schema == nil {
		schema = []byte(`{}`)
	}
	g, err := jsonschema.Compile(schema, opts)
	if err != nil {
		return nil, err
	}
	validator, err := jsonschema.NewValidator(schema, opts)
	if err != nil {
		return nil, err
	}
	p, err := grammar.Compile(g)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: %w", err)
	}
	a, err := NewAutomaton(p, v, t)
	if err != nil {
		return nil, err
	}
	return &JSONSchema{validator: validator, a: a, relaxed: opts.Relax}, nil
}

// Automaton returns the bound grammar, for Options.Constraint.
func (s *JSONSchema) Automaton() *Automaton { return s.a }

// JSONCompletion is a generation of one JSON value: the completion (its
// text and every token's logprobs) and the value parsed from the text,
// with numbers as json.Number.
type JSONCompletion struct {
	*Completion
	Value any `json:"value"`
}

// Complete generates one JSON value after prompt; see CompleteN.
func (s *JSONSchema) Complete(ctx context.Context, b Backend, prompt string, opts Options) (*JSONCompletion, error) {
	cs, err := s.CompleteN(ctx, b, prompt, 1, opts)
	if len(cs) == 1 {
		return cs[0], err
	}
	return nil, err
}

// CompleteN generates n JSON values after prompt (as CompleteN does,
// with the schema as the constraint), parses each, and validates it
// against the schema. An output that stopped early (MaxTokens, the
// context, a stop string) is an error that says so; an output that
// fails validation would be a bug in reins, and the error says that,
// unless opts.Relax dropped keywords from the grammar: then the error
// names them.
// The completions are returned with the error.
func (s *JSONSchema) CompleteN(ctx context.Context, b Backend, prompt string, n int, opts Options) ([]*JSONCompletion, error) {
	opts.Constraint = s.a.NewMatcher()
	cs, err := CompleteN(ctx, b, prompt, n, opts)
	out := make([]*JSONCompletion, len(cs))
	for i, c := range cs {
		out[i] = &JSONCompletion{Completion: c}
		if err != nil {
			continue
		}
		if c.FinishReason != FinishStop {
			err = fmt.Errorf("completion %d: the JSON value is unfinished (finish reason %s)", i, c.FinishReason)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(c.Text)))
		dec.UseNumber()
		if derr := dec.Decode(&out[i].Value); derr != nil {
			if len(opts.Stop) > 0 {
				err = fmt.Errorf("completion %d: a stop string ended the JSON value early: %w", i, derr)
			} else {
				err = fmt.Errorf("completion %d: reins bug: the constrained output is not JSON: %w", i, derr)
			}
			continue
		}
		if verr := s.validator.Validate([]byte(c.Text)); verr != nil {
			if len(s.relaxed) > 0 {
				err = fmt.Errorf("completion %d: the output fails the schema, whose keywords %v the grammar did not enforce (Options.Relax): %w", i, s.relaxed, verr)
			} else {
				err = fmt.Errorf("completion %d: reins bug: the constrained output fails the schema: %w", i, verr)
			}
		}
	}
	return out, err
}
