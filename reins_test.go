package reins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/fixture"
)

// budgetCases are constraints of every front end whose shortest output
// takes several tokens.
func budgetCases(t *testing.T) map[string]*Constraint {
	t.Helper()
	re, err := Regex(`(yes|no), because [a-z ]{3,12}\.`)
	require.NoError(t, err)
	g, err := Grammar(fixture.Arithmetic)
	require.NoError(t, err)
	nested, err := Grammar(`root ::= "[" ( root ("," root)* )? "]"`)
	require.NoError(t, err)
	schema, err := JSONSchema([]byte(`{"type": "object", "properties": {
		"name": {"type": "string", "minLength": 2},
		"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
		"inner": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 100}}, "required": ["n"]}},
		"required": ["name", "tags", "inner"]}`), nil)
	require.NoError(t, err)
	return map[string]*Constraint{"regex": re, "gbnf arithmetic": g, "gbnf nesting": nested, "schema": schema}
}

// TestBudgetKeepsRoomToFinish runs every front end with budgets from the
// fewest tokens that can finish the output up: every output comes back
// complete and in the language, at a high temperature that would
// otherwise wander; a budget below that is an *UnfinishedError at once.
func TestBudgetKeepsRoomToFinish(t *testing.T) {
	m := Builtin()
	for name, c := range budgetCases(t) {
		t.Run(name, func(t *testing.T) {
			a, err := c.automaton(m)
			require.NoError(t, err)
			least := a.NewMatcher().TokensToEnd()
			require.Positive(t, least)
			for budget := least; budget < least+15; budget++ {
				for seed := range uint64(4) {
					out, err := m.Generate(context.Background(), "The", Options{Constraint: c, MaxTokens: budget, Temperature: 1.5, Seed: seed})
					require.NoError(t, err, "budget %d seed %d", budget, seed)
					require.NoError(t, c.Match([]byte(out.Text)), "budget %d seed %d: %q", budget, seed, out.Text)
					require.LessOrEqual(t, len(out.Tokens), budget)
				}
			}
			if least == 1 {
				return // no budget below it to try (MaxTokens 0 is the default)
			}
			out, err := m.Generate(context.Background(), "The", Options{Constraint: c, MaxTokens: least - 1, Temperature: 1.5})
			require.ErrorIs(t, err, ErrUnfinished)
			var u *UnfinishedError
			require.ErrorAs(t, err, &u)
			assert.Equal(t, decode.FinishLength, u.Reason)
			assert.Contains(t, err.Error(), fmt.Sprintf("takes %d", least))
			assert.Nil(t, out)
		})
	}
}

// TestBudgetWithinContext: the context window is a budget too.
func TestBudgetWithinContext(t *testing.T) {
	b := fixture.New().NewBackend()
	b.ContextLen = 40
	m := New(b)
	c := budgetCases(t)["gbnf nesting"]
	for seed := range uint64(10) {
		out, err := m.Generate(context.Background(), "The cat", Options{Constraint: c, MaxTokens: 1000, Temperature: 2, Seed: seed})
		require.NoError(t, err, "seed %d", seed)
		require.NoError(t, c.Match([]byte(out.Text)))
	}
}

// TestUnfinishedIsNeverSuccess: an output cut by a cancellation or a
// stop string is an error that carries the partial output.
func TestUnfinishedIsNeverSuccess(t *testing.T) {
	b := fixture.New().NewBackend()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	b.BeforeEval = func([]decode.EvalRequest) error {
		if calls++; calls == 3 {
			cancel()
		}
		return nil
	}
	m := New(b)
	c := budgetCases(t)["schema"]
	out, err := m.Generate(ctx, "The", Options{Constraint: c, MaxTokens: 200, Temperature: 1})
	require.ErrorIs(t, err, ErrUnfinished)
	require.ErrorIs(t, err, context.Canceled)
	var u *UnfinishedError
	require.ErrorAs(t, err, &u)
	assert.Equal(t, decode.FinishCancelled, u.Reason)
	assert.NotEmpty(t, u.Completion.Text)
	assert.Error(t, c.Match([]byte(u.Completion.Text)), "the partial output is not in the language")
	require.NotNil(t, out)

	// A stop string that cuts the JSON: unfinished, not a success.
	re, err := Regex(`xaa+y`)
	require.NoError(t, err)
	_, err = Builtin().Generate(context.Background(), "x", Options{Constraint: re, Stop: []string{"aa"}, Temperature: 1, MaxTokens: 50})
	require.ErrorIs(t, err, ErrUnfinished)
	require.ErrorAs(t, err, &u)
	assert.Equal(t, decode.FinishStop, u.Reason)
}

func TestStreamSaysWhyItEnded(t *testing.T) {
	m := Builtin()
	c, err := Regex(`[a-z]+\.`)
	require.NoError(t, err)
	s := m.Stream(context.Background(), "The", Options{Constraint: c, MaxTokens: 6, Temperature: 1.3, Seed: 3})
	var text string
	for tok := range s.Tokens() {
		text += tok.Token
	}
	require.NoError(t, s.Err())
	require.NotNil(t, s.Completion())
	assert.Equal(t, text, s.Completion().Text)
	assert.Regexp(t, regexp.MustCompile(`^[a-z]+\.$`), text)
	assert.Contains(t, []string{decode.FinishStop, decode.FinishLength}, s.Completion().FinishReason)
}

// TestChooseIsExact: every option is scored in full in context; the
// probabilities are the exponentiated scores Score gives each option
// after the prompt, normalised, and the choice is the most probable,
// not the end of a greedy path through the options' tokens.
func TestChooseIsExact(t *testing.T) {
	m := Builtin()
	prompt := "The dog ran"
	options := []string{" the river", " then", " tree"}
	sel, err := m.Choose(context.Background(), prompt, options, ChooseOptions{})
	require.NoError(t, err)
	var sum, z float64
	scores := make([]float64, len(options))
	for i, o := range options {
		res, err := m.Score(context.Background(), o, ScoreOptions{Context: prompt})
		require.NoError(t, err)
		scores[i] = res.Sum
		z += math.Exp(res.Sum)
		assert.Equal(t, o, tokenText(res.Tokens), "the scored tokens spell the option exactly")
	}
	best := 0
	for i, o := range sel.Options {
		assert.Equal(t, options[i], o.Text)
		assert.InDelta(t, scores[i], o.Logprob, 1e-9)
		assert.InDelta(t, math.Exp(scores[i])/z, o.Prob, 1e-9)
		sum += o.Prob
		if o.Prob > sel.Options[best].Prob {
			best = i
		}
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.Equal(t, best, sel.Index)
	assert.Equal(t, " then", sel.Choice)

	// Generate under a Choice picks the same, with every option's
	// probability; going token by token would have ended in " the river".
	c, err := Choice(options...)
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), prompt, Options{Constraint: c})
	require.NoError(t, err)
	assert.Equal(t, " then", out.Text)
	assert.Equal(t, sel.Options, out.Options)
	a, err := c.automaton(m)
	require.NoError(t, err)
	greedy, err := decode.Complete(context.Background(), fixture.New().NewBackend(), prompt, decode.Options{Constraint: func() decode.Constraint { return a.NewMatcher() }})
	require.NoError(t, err)
	assert.Equal(t, " the river", greedy.Text, "the token-greedy path this test guards against")

	// Sampling draws options by their probabilities.
	counts := map[string]int{}
	for seed := range uint64(300) {
		s, err := m.Choose(context.Background(), prompt, options, ChooseOptions{Temperature: 1, Seed: seed})
		require.NoError(t, err)
		counts[s.Choice]++
	}
	for _, o := range sel.Options {
		assert.InDelta(t, o.Prob, float64(counts[o.Text])/300, 0.07, "%q", o.Text)
	}

	// Generate and Stream under a Choice take the same options: TopK 1
	// keeps only the likeliest option whatever the seed; Stop, Prefill
	// and Sampler mean nothing for a whole option and are refused.
	for seed := range uint64(20) {
		outs, err := m.GenerateN(context.Background(), prompt, 2, Options{Constraint: c, Temperature: 5, TopK: 1, Seed: seed})
		require.NoError(t, err)
		for _, o := range outs {
			assert.Equal(t, " then", o.Text, "seed %d", seed)
		}
		outs[0].Options[0].Prob = -1
		assert.NotEqual(t, -1.0, outs[1].Options[0].Prob, "outputs do not share their options")
	}
	for _, bad := range []Options{
		{Constraint: c, Stop: []string{"n"}},
		{Constraint: c, Prefill: " "},
		{Constraint: c, Sampler: decode.SamplerFunc(func([]float32) (int, error) { return 0, nil })},
	} {
		var oe *OptionError
		_, err := m.Generate(context.Background(), prompt, bad)
		assert.ErrorAs(t, err, &oe)
		s := m.Stream(context.Background(), prompt, bad)
		for range s.Tokens() {
		}
		assert.ErrorAs(t, s.Err(), &oe)
	}
}

func tokenText(toks []Token) string {
	var s string
	for _, t := range toks {
		s += t.Token
	}
	return s
}

func TestChoiceErrors(t *testing.T) {
	for _, opts := range [][]string{nil, {"a", ""}, {"a", "b", "a"}} {
		_, err := Choice(opts...)
		assert.Error(t, err, "%q", opts)
		_, err = Builtin().Choose(context.Background(), "x", opts, ChooseOptions{})
		assert.Error(t, err, "%q", opts)
	}
}

// TestScoreContextScoresTheText: " happy" after a context is scored as
// " happy", not as the text tokenized alone.
func TestScoreContextScoresTheText(t *testing.T) {
	m := Builtin()
	for _, tt := range []struct{ context, text string }{
		{"I am", " happy"}, {"The", " the end"}, {"The ", "cat"}, {"Th", "e cat"}, {"x", "\xff\xfe"},
	} {
		res, err := m.Score(context.Background(), tt.text, ScoreOptions{Context: tt.context})
		require.NoError(t, err, "%q", tt)
		assert.Equal(t, tt.text, tokenText(res.Tokens), "%q", tt)
		// The sum is the log-probability of exactly these tokens after
		// the context's.
		b := fixture.New().NewBackend()
		prefix, toks, err := decode.Continuation(b, tt.context, tt.text)
		require.NoError(t, err)
		want := 0.0
		prev := prefix[len(prefix)-1]
		for _, id := range toks {
			want += float64(b.Model().LogProb(prev, id))
			prev = id
		}
		assert.InDelta(t, want, res.Sum, 1e-4, "%q", tt)
	}
}

// TestConcurrentCalls: calls from many goroutines share the model's
// sequences and give what they give alone.
func TestConcurrentCalls(t *testing.T) {
	m := Builtin()
	c := budgetCases(t)["schema"]
	want := make([]string, 24)
	for i := range want {
		out, err := m.Generate(context.Background(), "The", Options{Constraint: c, MaxTokens: 60, Temperature: 1, Seed: uint64(i)})
		require.NoError(t, err)
		want[i] = out.Text
	}
	var wg sync.WaitGroup
	got := make([]string, len(want))
	errs := make([]error, len(want))
	for i := range want {
		wg.Go(func() {
			out, err := m.Generate(context.Background(), "The", Options{Constraint: c, MaxTokens: 60, Temperature: 1, Seed: uint64(i)})
			if errs[i] = err; err == nil {
				got[i] = out.Text
			}
		})
	}
	wg.Wait()
	for i := range want {
		require.NoError(t, errs[i])
	}
	assert.Equal(t, want, got)
}

// TestGenerateNBeyondSequences: more branches than the backend has
// sequences run in groups, branch i with seed Seed+i.
func TestGenerateNBeyondSequences(t *testing.T) {
	m := Builtin()
	opts := Options{MaxTokens: 12, Temperature: 1.2, Seed: 7}
	outs, err := m.GenerateN(context.Background(), "The cat", 20, opts)
	require.NoError(t, err)
	require.Len(t, outs, 20)
	for i, out := range outs {
		o := opts
		o.Seed += uint64(i)
		single, err := m.Generate(context.Background(), "The cat", o)
		require.NoError(t, err)
		assert.Equal(t, single.Text, out.Text, "branch %d", i)
	}
}

func TestClosedModel(t *testing.T) {
	m := Builtin()
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	_, err := m.Generate(context.Background(), "x", Options{})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = m.Score(context.Background(), "x", ScoreOptions{})
	assert.ErrorIs(t, err, ErrClosed)
}

// TestCloseDuringCalls: Close waits for the calls in progress, on a
// local model and on a server; calls waiting for a sequence, or begun
// after, return ErrClosed; the backend is closed only once no call uses
// it, and nothing hangs.
func TestCloseDuringCalls(t *testing.T) {
	local := &closeWatch{}
	local.LogitsBackend = fixture.New().NewBackend()
	tb := &fixture.TextBackend{B: fixture.New().NewBackend(), TopK: 5}
	server := &closeWatchText{TextBackend: lockedText{mu: new(sync.Mutex), tb: tb}}
	for name, c := range map[string]struct {
		m      *Model
		closed *atomic.Bool
		used   *atomic.Int32
	}{
		"local":  {New(local), &local.closed, &local.afterClose},
		"server": {New(server), &server.closed, &server.afterClose},
	} {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			var ok, refused atomic.Int32
			for i := range 16 {
				wg.Go(func() {
					var err error
					switch i % 3 {
					case 0:
						_, err = c.m.Generate(context.Background(), "The cat", Options{MaxTokens: 20, Temperature: 1, Seed: uint64(i)})
					case 1:
						_, err = c.m.Choose(context.Background(), "The cat", []string{" sat", " ran"}, ChooseOptions{})
					default:
						s := c.m.Stream(context.Background(), "The cat", Options{MaxTokens: 20})
						for range s.Tokens() {
						}
						err = s.Err()
					}
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, ErrClosed):
						refused.Add(1)
					default:
						t.Errorf("call %d: %v", i, err)
					}
				})
			}
			time.Sleep(time.Millisecond)
			done := make(chan error, 1)
			go func() { done <- c.m.Close() }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Close hung")
			}
			wg.Wait()
			assert.True(t, c.closed.Load())
			assert.Zero(t, c.used.Load(), "the backend was used after it was closed")
			assert.Equal(t, int32(16), ok.Load()+refused.Load())
			_, err := c.m.Generate(context.Background(), "x", Options{})
			assert.ErrorIs(t, err, ErrClosed)
		})
	}
}

// closeWatch is a logits backend that counts its use after Close.
type closeWatch struct {
	decode.LogitsBackend
	closed     atomic.Bool
	afterClose atomic.Int32
}

func (w *closeWatch) Eval(ctx context.Context, reqs []decode.EvalRequest) error {
	if w.closed.Load() {
		w.afterClose.Add(1)
	}
	time.Sleep(100 * time.Microsecond) // calls overlap Close
	return w.LogitsBackend.Eval(ctx, reqs)
}

func (w *closeWatch) Close() error { w.closed.Store(true); return nil }

// closeWatchText is the same for a server.
type closeWatchText struct {
	decode.TextBackend
	closed     atomic.Bool
	afterClose atomic.Int32
}

func (w *closeWatchText) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	if w.closed.Load() {
		w.afterClose.Add(1)
	}
	time.Sleep(100 * time.Microsecond)
	return w.TextBackend.Continue(ctx, req)
}

func (w *closeWatchText) Close() error { w.closed.Store(true); return nil }

func TestTypedErrors(t *testing.T) {
	_, err := JSONSchema([]byte(`{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}`), nil)
	var se *jsonschema.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "#/properties/a", se.Pointer)
	assert.Equal(t, "$ref", se.Keyword)

	_, err = Builtin().Generate(context.Background(), "x", Options{TopLogprobs: -1})
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "TopLogprobs", oe.Field)

	var ge *grammar.Error
	_, err = Regex("")
	assert.ErrorAs(t, err, &ge, "an empty constraint is an error, not no constraint")
	_, err = Grammar(" ")
	assert.ErrorAs(t, err, &ge)
	_, err = JSONSchema(nil, nil)
	assert.ErrorAs(t, err, &se)
	_, err = JSONSchema([]byte(`{}`), &JSONOptions{Whitespace: -1})
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Whitespace", oe.Field)
}

// TestSchemaFaultBeforeGrammarFault: a schema the validator refuses
// (two $ids alike) whose grammar would also fail (its oneOf leaves the
// start rule nothing to match) is refused for its own fault, as when the
// grammar was compiled after the validator: the program is compiled
// first now (jsonschema.CompileProg), but its error waits.
func TestSchemaFaultBeforeGrammarFault(t *testing.T) {
	schema := `{"$defs": {"a": {"$id": "http://x/y"}, "b": {"$id": "http://x/y"}},
		"oneOf": [{"anyOf": [{"required": ["x"], "not": {"required": ["error"]}}, {"required": ["error"], "not": {"required": ["x"]}}]},
			{"type": "object", "dependencies": {"x": {"not": {"required": ["error"]}}}, "minProperties": 1}]}`
	_, _, progErr := jsonschema.CompileProg([]byte(schema), jsonschema.Options{Bounded: true})
	var ge *grammar.Error
	require.ErrorAs(t, progErr, &ge, "the grammar fails too")
	_, err := JSONSchema([]byte(schema), nil)
	require.Error(t, err)
	assert.False(t, errors.As(err, &ge), "%v", err)
	assert.Contains(t, err.Error(), "same canonical-uri")

	// A schema's own error comes first as it did, even where it wraps a
	// pattern's *grammar.Error: Compile's, before the validator's.
	for _, schema := range []string{`{"type": "string", "pattern": "(?<"}`, `{"type": "string", "pattern": "a{2,1}"}`, `{"type": "object", "minProperties": -1}`} {
		_, want := jsonschema.Compile([]byte(schema), jsonschema.Options{Bounded: true})
		require.Error(t, want, schema)
		_, err := JSONSchema([]byte(schema), nil)
		assert.Equal(t, want.Error(), fmt.Sprint(err), schema)
	}
}

// TestRelaxedKeywordFailure: an output that breaks a keyword the grammar
// was told to drop is an *InvalidOutputError that says so.
func TestRelaxedKeywordFailure(t *testing.T) {
	schema := []byte(`{"type": "array", "items": {"enum": [1]}, "minItems": 2, "maxItems": 2, "uniqueItems": true}`)
	_, err := JSONSchema(schema, nil)
	require.ErrorContains(t, err, "uniqueItems")
	c, err := JSONSchema(schema, &JSONOptions{Relax: []string{"uniqueItems"}})
	require.NoError(t, err)
	out, err := Builtin().Generate(context.Background(), "The", Options{Constraint: c, MaxTokens: 20})
	var inv *InvalidOutputError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, []string{"uniqueItems"}, inv.Relaxed)
	assert.NotContains(t, err.Error(), "reins bug")
	var items []float64
	require.NoError(t, json.Unmarshal([]byte(out.Text), &items), "%q", out.Text)
	assert.Equal(t, []float64{1, 1}, items, "the two items equal, which uniqueItems refuses")
}

// TestFormatAnnotation: JSONOptions.FormatAnnotation reaches both the
// grammar and the validator, in every draft; by default both keep a
// string to its format.
func TestFormatAnnotation(t *testing.T) {
	for _, draft := range []string{"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#"} {
		schema := []byte(`{"$schema": "` + draft + `", "type": "object", "properties": {"mail": {"type": "string", "format": "email", "maxLength": 8}}, "required": ["mail"]}`)
		def, err := JSONSchema(schema, &JSONOptions{Unbounded: true})
		require.NoError(t, err)
		anno, err := JSONSchema(schema, &JSONOptions{Unbounded: true, FormatAnnotation: true})
		require.NoError(t, err)
		var rej *RejectError
		assert.ErrorAs(t, def.Check(strings.NewReader(`{"mail":"2962"}`)), &rej, draft)
		assert.NoError(t, anno.Check(strings.NewReader(`{"mail":"2962"}`)), draft)
		assert.NoError(t, def.Check(strings.NewReader(`{"mail":"a@b.cd"}`)), draft)
		assert.NoError(t, anno.Check(strings.NewReader(`{"mail":"a@b.cd"}`)), draft)
		assert.ErrorAs(t, anno.Check(strings.NewReader(`{"mail":"a@bcd.efgh"}`)), &rej, "%s: maxLength still holds", draft)
	}
}

// TestMatch checks a constraint's own matcher on text.
func TestMatch(t *testing.T) {
	c, err := JSONSchema([]byte(`{"type": "object", "properties": {"a": {"type": "integer", "maximum": 3}}, "required": ["a"]}`), nil)
	require.NoError(t, err)
	assert.NoError(t, c.Match([]byte(`{"a":3}`)))
	var rej *RejectError
	require.ErrorAs(t, c.Match([]byte(`{"a":4}`)), &rej)
	assert.Equal(t, 5, rej.Offset)
	require.ErrorAs(t, c.Match([]byte(`{"a":3`)), &rej)
	assert.True(t, rej.EOF)
	spaced, err := JSONSchema([]byte(`{"type": "object"}`), &JSONOptions{Whitespace: 1})
	require.NoError(t, err)
	require.ErrorAs(t, spaced.Match([]byte("{\"a\":\n\xff")), &rej)
	assert.Equal(t, 2, rej.Line)
	assert.Contains(t, rej.Error(), `\xff is not allowed`)
	require.ErrorAs(t, c.Match([]byte(`{"é":1}`)), &rej)
	assert.Equal(t, "'é'", rej.Got)
	assert.Contains(t, rej.Error(), `'é' is not allowed`)
}

// TestGenerateJSONValue: the JSON Value is the parsed text.
func TestGenerateJSONValue(t *testing.T) {
	m := Builtin()
	c := budgetCases(t)["schema"]
	for seed := range uint64(5) {
		out, err := m.Generate(context.Background(), "{", Options{Constraint: c, MaxTokens: 80, Temperature: 1, Seed: seed})
		require.NoError(t, err)
		var want any
		require.NoError(t, json.Unmarshal([]byte(out.Text), &want))
		got, err := json.Marshal(out.Value)
		require.NoError(t, err)
		wantText, err := json.Marshal(want)
		require.NoError(t, err)
		assert.JSONEq(t, string(wantText), string(got))
		require.NoError(t, jsonschema.Validate([]byte(`{"required": ["name", "tags", "inner"]}`), []byte(out.Text)))
	}
}

// TestCheckWorkBudget: a grammar too ambiguous for the text is an error
// wrapping ErrWorkBudget, not a verdict, and comes back at once.
func TestCheckWorkBudget(t *testing.T) {
	g, err := Grammar("root ::= x\nx ::= x x | \"a\" | \"\"\n")
	require.NoError(t, err)
	err = g.Check(strings.NewReader(strings.Repeat("a", 4000)))
	require.ErrorIs(t, err, ErrWorkBudget)
	var rej *RejectError
	assert.False(t, errors.As(err, &rej), "not a rejection")
	require.NoError(t, g.Check(strings.NewReader("aaa")))
}

// TestWarnings: a GBNF rule that matches nothing is compiled away with a
// warning.
func TestWarnings(t *testing.T) {
	g, err := Grammar("root ::= \"a\" | loop\nloop ::= \"x\" loop\n")
	require.NoError(t, err)
	assert.NotEmpty(t, g.Warnings())
}

// TestCloseEndsAStream: Close from another goroutine while a stream's
// consumer is in its loop ends the stream after the token being
// yielded, with ErrClosed, instead of waiting for the whole generation;
// the backend is closed after the stream has let it go.
func TestCloseEndsAStream(t *testing.T) {
	w := &closeWatch{}
	w.LogitsBackend = fixture.New().NewBackend()
	m := New(w)
	s := m.Stream(context.Background(), "The cat", Options{MaxTokens: 200, Temperature: 1, Stop: []string{"\x00"}})
	closed := make(chan error, 1)
	n := 0
	for range s.Tokens() {
		n++
		if n == 2 {
			go func() { closed <- m.Close() }()
			<-m.closing // Close has begun
		}
	}
	assert.ErrorIs(t, s.Err(), ErrClosed)
	assert.Nil(t, s.Completion(), "a stream cut by Close has no completion")
	assert.Equal(t, 2, n, "the stream ended with the token it was yielding when Close began")
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung")
	}
	assert.True(t, w.closed.Load())
	assert.Zero(t, w.afterClose.Load(), "the backend was used after it was closed")
}

// TestCheckDeepJSON: JSON nested deeper than the validator decodes is
// judged by the grammar alone (in the language, or not), never reported
// as a failure of reins; brackets inside strings do not count.
func TestCheckDeepJSON(t *testing.T) {
	deep := func(n int, inner string) []byte {
		return []byte(strings.Repeat("[", n) + inner + strings.Repeat("]", n))
	}
	c, err := JSONSchema([]byte(`{}`), &JSONOptions{Unbounded: true}) // as check takes it
	require.NoError(t, err)
	for _, n := range []int{MaxValidateDepth, MaxValidateDepth + 1, 5 * MaxValidateDepth} {
		assert.NoError(t, c.Match(deep(n, "")), "depth %d", n)
		var rej *RejectError
		assert.ErrorAs(t, c.Match(deep(n, "1,")), &rej, "depth %d", n)
	}
	assert.Equal(t, 2, jsonDepth([]byte(`[{"a": "[[[{{{\"]]]"}]`)))
	assert.Equal(t, MaxValidateDepth+1, jsonDepth(deep(3*MaxValidateDepth, "")), "counting stops past the limit")
}

// TestCheckManyValues: a JSON text of more values than the validator
// decodes (30 MB of small numbers had taken 2.4 GB) is judged by the
// grammar alone where the grammar is exact, and is an error, not a
// verdict, where the grammar relaxes a keyword the validator would check.
func TestCheckManyValues(t *testing.T) {
	many := []byte("[" + strings.Repeat("1,", MaxValidateValues) + "1]")
	exact, err := JSONSchema([]byte(`{"type": "array", "items": {"type": "integer"}}`), &JSONOptions{Unbounded: true})
	require.NoError(t, err)
	assert.NoError(t, exact.Match(many))
	relaxed, err := JSONSchema([]byte(`{"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true}`), &JSONOptions{Unbounded: true, Relax: []string{"uniqueItems"}})
	require.NoError(t, err)
	var inv *InvalidOutputError
	assert.ErrorAs(t, relaxed.Match([]byte("[1,1]")), &inv)
	err = relaxed.Match(many)
	assert.ErrorContains(t, err, "too large to validate against the keywords it does not enforce (uniqueItems)")
	assert.False(t, errors.As(err, &inv), "no verdict: %v", err)
	assert.ErrorIs(t, err, ErrValidateLimit)
	_, values := jsonShape([]byte(`[{"a": "[,,{", "b": [1, 2]}, 3]`))
	assert.Equal(t, 6, values, "openings and commas outside strings")
}

// TestTokenTerminalOutputs: a grammar that names a special token is kept
// to by the masks; its output, which text cannot show, is not judged
// again as text (that failed as "reins bug"), and HasTokenTerminals says
// so. One that names an end-of-generation token is refused when bound.
func TestTokenTerminalOutputs(t *testing.T) {
	m := Builtin()
	v := m.Vocab()
	c, err := Grammar(fmt.Sprintf(`root ::= <[%d]>`, v.BOS()))
	require.NoError(t, err)
	assert.True(t, c.HasTokenTerminals())
	out, err := m.Generate(context.Background(), "Once", Options{Constraint: c, MaxTokens: 4})
	require.NoError(t, err)
	require.Len(t, out.Tokens, 1)
	assert.Equal(t, v.BOS(), out.Tokens[0].ID)

	c, err = Grammar(fmt.Sprintf(`root ::= "a" <[%d]>`, v.EOS()))
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), "Once", Options{Constraint: c, MaxTokens: 4})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ends generation")

	c, err = Grammar(`root ::= "a"`)
	require.NoError(t, err)
	assert.False(t, c.HasTokenTerminals())
}

// TestChooseNamesTheOptionThatFailed: an option too long for the context
// is named by its index and its first characters.
func TestChooseNamesTheOptionThatFailed(t *testing.T) {
	m := Builtin()
	long := strings.Repeat("b", m.logits.ContextSize()+10)
	_, err := m.Choose(context.Background(), "Pick", []string{"a", long}, ChooseOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `option 1 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb": `)
	assert.Contains(t, err.Error(), "the context holds")
}
