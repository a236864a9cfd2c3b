// Package extract turns documents into JSON values valid against a
// schema, with the confidence of every field: for each leaf of the value
// (keyed by its JSON pointer), the probability under the constrained
// distribution of the tokens that decided it, and under the raw model;
// for enums and booleans, the probability of every alternative, each
// scored in full in context.
//
// One document at a time with Extractor.Extract; a pipeline over many
// (text files, folders, JSONL), concurrent, resumable, with every
// failure recorded beside the results, with Extractor.Run. The command
// line's "reins extract" is Run.
//
// # Confidence
//
// A leaf's tokens are those that spell any byte of its JSON text (the
// quotes of a string included, so the token that closes it, and with it
// the decision to end it, counts) and, for a number that ends between
// two tokens, the token after it, whose choice ended the number. Its
// Confidence is the product of those tokens' probabilities under the
// constrained distribution: a token the schema forced (a key, a quote, a
// const) has probability 1 there, so structure counts as certain and a
// value the schema fixes has confidence 1. Raw is the same product under
// the model's own distribution.
//
// Where the schema lists a leaf's values (an enum, a const, a boolean),
// every one of them is scored in full in the document's context (the
// JSON before the leaf), followed by the JSON text that came after the
// leaf up to the next value (so that a boundary does not favour one),
// with reins.Model.Choose: Alternatives holds each with its probability
// among them, and Confidence is the chosen one's. On a local model these
// are exact; on a server they come from its top alternatives.
//
// # Choosing listed values
//
// Generation goes token by token, and the likeliest first token may
// begin a value that is not the likeliest in full ("b" of "bird" when
// "cat" carries the most probability). So where the schema lists a
// leaf's values, the value extracted is the most probable of them in
// full: when generation wrote another, the output up to the leaf and the
// most probable value become a prefill (reins.Options.Prefill), and the
// rest is generated again after it. Each leaf is decided once, in
// document order, so a document takes at most one generation more than
// it has such leaves written otherwise. On a server the most probable
// value takes the written one's place and the JSON after it stays as
// the server wrote it (conditioned on the value it wrote): a server that
// keeps to the schema itself would not after a prefill, and a model too
// small to write JSON keys alone could not go on.
package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/program"
)

// DefaultInstructions open the prompt when Options.Instructions is "".
const DefaultInstructions = "Extract the information in the document below as JSON."

// Options configures an Extractor. The zero value is greedy, with the
// default instructions.
type Options struct {
	// Instructions open the prompt; the document follows, then "JSON: ".
	Instructions string
	// Temperature 0 is greedy; above 0 samples, seeded by Seed (the same
	// seed for every document).
	Temperature float64
	Seed        uint64
	// MaxTokens bounds the JSON's tokens (0: DefaultMaxTokens).
	MaxTokens int
	// TopLogprobs is how many alternatives each token reports.
	TopLogprobs int
	// JSON configures the schema's compilation (nil: compact, bounded;
	// on a server that keeps outputs to a schema itself, with up to
	// reins.ServerWhitespace whitespace characters between JSON tokens,
	// as the server lays them out).
	JSON *reins.JSONOptions
}

// DefaultMaxTokens bounds the JSON of one document when Options sets no
// MaxTokens.
const DefaultMaxTokens = 512

// MaxDocumentBytes bounds a document's text.
const MaxDocumentBytes = 1 << 20

// Extractor extracts JSON valid against one schema. It is safe for
// concurrent use: documents may be extracted at once on one model.
type Extractor struct {
	m      *reins.Model
	c      *reins.Constraint
	schema any // the schema decoded, to find enums
	opts   Options
	// inPlace: the model is a server, where a prefill would lose the
	// server's own keeping to the schema; a listed value more probable
	// than the one written takes its place, and the rest is kept.
	inPlace bool
}

// New returns an Extractor for schema on model m. A $ref to another
// document needs opts.JSON.Loader; NewFile sets one.
func New(m *reins.Model, schema []byte, opts *Options) (*Extractor, error) {
	o := options(m, opts)
	c, err := reins.JSONSchema(schema, o.JSON)
	if err != nil {
		return nil, err
	}
	return newExtractor(m, c, schema, o)
}

// NewFile is New for the schema in file path (at most
// reins.MaxSourceBytes); its $refs load only files beside it.
func NewFile(m *reins.Model, path string, opts *Options) (*Extractor, error) {
	o := options(m, opts)
	c, err := reins.JSONSchemaFile(path, o.JSON)
	if err != nil {
		return nil, err
	}
	return newExtractor(m, c, c.Schema(), o) // the schema as compiled: the file is read once
}

func options(m *reins.Model, opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.JSON == nil && m.Capabilities().JSONSchema {
		o.JSON = &reins.JSONOptions{Whitespace: reins.ServerWhitespace}
	}
	if o.Instructions == "" {
		o.Instructions = DefaultInstructions
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	return o
}

func newExtractor(m *reins.Model, c *reins.Constraint, schema []byte, o Options) (*Extractor, error) {
	x := &Extractor{m: m, c: c, opts: o, inPlace: !m.Capabilities().Logits}
	if err := json.Unmarshal(schema, &x.schema); err != nil {
		return nil, fmt.Errorf("extract: decode the schema: %w", err)
	}
	return x, nil
}

// Result is one document's extraction.
type Result struct {
	// Value is the JSON text, valid against the schema.
	Value json.RawMessage `json:"value"`
	// Fields are the value's leaves, in document order.
	Fields []Field `json:"fields"`
	// Completion is the generation, with every token.
	Completion *reins.Completion `json:"-"`
}

// Field is one leaf of an extracted value and how sure the model was.
type Field struct {
	Pointer string          `json:"pointer"`
	Value   json.RawMessage `json:"value"`
	// Confidence is the probability of the leaf under the constrained
	// distribution (see the package documentation); Raw under the
	// model's own.
	Confidence float64 `json:"confidence"`
	Raw        float64 `json:"raw"`
	// Alternatives are, where the schema lists the leaf's values, each
	// with its probability among them.
	Alternatives []Alternative `json:"alternatives,omitempty"`
	Tokens       []reins.Token `json:"tokens"`
}

// Alternative is one value the schema allowed for a leaf.
type Alternative struct {
	Value json.RawMessage `json:"value"`
	Prob  float64         `json:"prob"`
	// Logprob is the model's log-probability of the value's text (and of
	// the text after it) in context.
	Logprob float64 `json:"logprob"`
	TopK    bool    `json:"top_k,omitempty"`

	tokens []reins.Token // the tokens that spell the value, as scored
	raw    float64       // the product of their probabilities under the model
}

// Confidence returns every field's confidence by JSON pointer.
func (r *Result) Confidence() map[string]float64 {
	out := make(map[string]float64, len(r.Fields))
	for _, f := range r.Fields {
		out[f.Pointer] = f.Confidence
	}
	return out
}

// Prompt returns the prompt for a document.
func (x *Extractor) Prompt(text string) string {
	return x.opts.Instructions + "\n\n" + text + "\n\nJSON: "
}

// maxThen bounds the JSON text after a leaf scored with its
// alternatives.
const maxThen = 64

// Extract extracts one document.
func (x *Extractor) Extract(ctx context.Context, text string) (*Result, error) {
	if len(text) > MaxDocumentBytes {
		return nil, fmt.Errorf("extract: the document has %d bytes, more than MaxDocumentBytes (%d)", len(text), MaxDocumentBytes)
	}
	prompt := x.Prompt(text)
	decided := ""       // the output up to the last value chosen in full, generated no more
	var settled []Field // the fields within decided
	for {
		out, err := x.m.Generate(ctx, prompt, reins.Options{Constraint: x.c, MaxTokens: x.opts.MaxTokens, Heal: decided == "",
			Prefill: decided, Temperature: x.opts.Temperature, Seed: x.opts.Seed, TopLogprobs: x.opts.TopLogprobs})
		if err != nil {
			return nil, err
		}
		whole := decided + out.Text
		leaves, err := Leaves([]byte(whole))
		if err != nil {
			return nil, fmt.Errorf("reins bug: %w", err)
		}
		res := &Result{Completion: out, Fields: append([]Field(nil), settled...)}
		// The tokens spell Healed, then Text: byte i of whole is byte
		// i-len(decided)+len(Healed) of the tokens.
		shift := len(out.Healed) - len(decided)
		rechosen := false
		delta := 0 // on a server, how far values put in place moved the leaves after them
		for i, leaf := range leaves {
			if leaf.Start < len(decided) {
				continue // settled in an earlier round
			}
			l := leaf // where the leaf is in whole now
			l.Start, l.End = leaf.Start+delta, leaf.End+delta
			f := Field{Pointer: l.Pointer, Value: json.RawMessage(whole[l.Start:l.End])}
			number := l.Kind == '-' || l.Kind >= '0' && l.Kind <= '9'
			f.Tokens = program.ValueTokens(out.Tokens, leaf.Start+shift, leaf.End+shift, number)
			var lp, clp float64
			for _, t := range f.Tokens {
				lp += t.Logprob
				if t.Constrained != nil {
					clp += t.Constrained.Logprob
				} else {
					clp += t.Logprob
				}
			}
			f.Confidence, f.Raw = math.Exp(clp), math.Exp(lp)
			if alts, ok := alternativesAt(x.schema, l.Path); ok {
				then := whole[l.End:]
				if i+1 < len(leaves) {
					then = whole[l.End : leaves[i+1].Start+delta]
				}
				if len(then) > maxThen {
					then = then[:maxThen]
				}
				best, err := x.alternatives(ctx, &f, prompt+whole[:l.Start], whole, l, alts, then)
				if err != nil {
					return nil, err
				}
				if best != nil && string(best.Value) != string(f.Value) && x.inPlace {
					// On a server: the most probable value takes the
					// written one's place (alternatives keeps only values
					// that leave the whole valid), the rest stays as the
					// server wrote it.
					whole = whole[:l.Start] + string(best.Value) + whole[l.End:]
					delta += len(best.Value) - (l.End - l.Start)
					f.Value, f.Tokens = best.Value, best.tokens
					f.Confidence, f.Raw = best.Prob, best.raw
				} else if best != nil && string(best.Value) != string(f.Value) {
					// Generation wrote a less probable value: take the most
					// probable and generate the rest after it.
					f.Value, f.Tokens = best.Value, best.tokens
					f.Confidence, f.Raw = best.Prob, best.raw
					decided = whole[:l.Start] + string(best.Value)
					settled = append(res.Fields, f)
					rechosen = true
					break
				}
			}
			res.Fields = append(res.Fields, f)
		}
		if !rechosen {
			res.Value = json.RawMessage(whole)
			return res, nil
		}
	}
}

// alternatives scores the values alts lists for leaf l of text, keeping
// those the schema allows there, and returns the most probable (nil when
// the leaf is written otherwise than the schema lists it).
func (x *Extractor) alternatives(ctx context.Context, f *Field, context, text string, l Leaf, alts []string, then string) (*Alternative, error) {
	chosen := text[l.Start:l.End]
	var keep []string
	for _, a := range alts {
		if a == chosen || x.c.Match([]byte(text[:l.Start]+a+text[l.End:])) == nil {
			keep = append(keep, a)
		}
	}
	if !containsString(keep, chosen) {
		return nil, nil // written otherwise than the schema lists it: the tokens' confidence stands
	}
	if len(keep) == 1 {
		f.Confidence = 1
		f.Alternatives = []Alternative{{Value: json.RawMessage(chosen), Prob: 1}}
		return &f.Alternatives[0], nil
	}
	sel, err := x.m.Choose(ctx, context, keep, reins.ChooseOptions{Then: then, Heal: true})
	if err != nil {
		if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("score the alternatives of %s: %w", orRoot(f.Pointer), err)
	}
	for _, o := range sel.Options {
		a := Alternative{Value: json.RawMessage(o.Text), Prob: o.Prob, Logprob: o.Logprob, TopK: o.TopK}
		// The option's tokens spell what healing took back, the value,
		// then the text after it.
		spelled := 0
		for _, t := range o.Tokens {
			spelled += len(t.Bytes)
		}
		start := spelled - len(o.Text) - len(then)
		number := o.Text != "" && (o.Text[0] == '-' || o.Text[0] >= '0' && o.Text[0] <= '9')
		a.tokens = program.ValueTokens(o.Tokens, start, start+len(o.Text), number)
		lp := 0.0
		for _, t := range a.tokens {
			lp += t.Logprob
		}
		a.raw = math.Exp(lp)
		f.Alternatives = append(f.Alternatives, a)
		if o.Text == chosen {
			f.Confidence = o.Prob
		}
	}
	return &f.Alternatives[sel.Index], nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return strings.TrimSpace(p)
}
