package program

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/fixture"
)

// models are the two kinds of backend a program runs on: the built-in
// model with every logit, and the same model served as a text server
// that returns a few alternatives per token.
func models(t *testing.T) map[string]*reins.Model {
	return map[string]*reins.Model{
		"logits": reins.Builtin(),
		"server": reins.New(&fixture.TextBackend{B: fixture.New().NewBackend(), TopK: 20}),
	}
}

const quiz = "quiz.tmpl"

func parseTestdata(t *testing.T, name string) *Program {
	t.Helper()
	p, err := ParseFile(filepath.Join("..", "testdata", "programs", name))
	require.NoError(t, err)
	return p
}

// TestCapturedValuesObeyTheirConstraints: on both backends, at a high
// temperature and over seeds, every value is in its hole's language and
// the filled text is the literal text with the values in their places.
func TestCapturedValuesObeyTheirConstraints(t *testing.T) {
	p := parseTestdata(t, quiz)
	schema, err := jsonschema.NewValidator([]byte(`{"type": "object", "properties": {"animal": {"enum": ["cat", "dog", "bird"]},
		"happy": {"type": "boolean"}, "name": {"type": "string", "maxLength": 12}}, "required": ["animal", "happy", "name"],
		"additionalProperties": false}`), jsonschema.Options{})
	require.NoError(t, err)
	place := regexp.MustCompile(`^[a-z]{2,12}$`)
	legs := regexp.MustCompile(`^[0-9]{1,2}$`)
	for name, m := range map[string]*reins.Model{"logits": reins.Builtin()} {
		for seed := range uint64(6) {
			res, err := p.Run(context.Background(), m, &RunOptions{Vars: map[string]any{"animal": "dog"}, Temperature: 1.5, Seed: seed})
			require.NoError(t, err, "%s seed %d", name, seed)
			require.Len(t, res.Captures, 4)
			assert.Regexp(t, place, res.Capture("place").Value, "%s seed %d", name, seed)
			assert.Regexp(t, legs, res.Capture("legs").Value, "%s seed %d", name, seed)
			assert.Contains(t, []string{"yes", "no", "maybe"}, res.Capture("happy").Value)
			sum := res.Capture("summary")
			require.NoError(t, schema.Validate([]byte(sum.Value)), "%s seed %d: %s", name, seed, sum.Value)
			assert.NotNil(t, sum.JSON)
			want := "The cat sat on the mat. The dog ran to the river.\nQuestion: Where did the cat sit?\nAnswer: on the " +
				res.Capture("place").Value + ".\nHow many legs does a dog have? " + res.Capture("legs").Value +
				" legs.\nIs the cat happy? " + res.Capture("happy").Value + "\nIn JSON: " + sum.Value + "\n"
			assert.Equal(t, want, res.Text)
			for _, c := range res.Captures {
				assert.True(t, c.Prob >= 0 && c.Prob <= 1, "%s: prob %g", c.Name, c.Prob)
				assert.LessOrEqual(t, c.Logprob, 1e-9)
				assert.NotEmpty(t, c.Tokens, c.Name)
			}
		}
	}
}

// TestCapturedValuesObeyTheirConstraintsOnAServer: the same on a text
// server that returns 20 alternatives per token (holes it can fill from
// them: a server's constrained generation fails where none of its
// alternatives is allowed, as after "legs? " for a digit).
func TestCapturedValuesObeyTheirConstraintsOnAServer(t *testing.T) {
	p, err := Parse("t", `The cat sat on the {{gen "place" regex="[a-z ]{1,12}" max_tokens=12}}. It was {{select "mood" options=["happy", "sad"]}}.
JSON: {{gen "j" json=true max_tokens=30}}
{{gen "free" stop="." max_tokens=8}}.`, nil)
	require.NoError(t, err)
	place := regexp.MustCompile(`^[a-z ]{1,12}$`)
	for name, m := range models(t) {
		for seed := range uint64(6) {
			res, err := p.Run(context.Background(), m, &RunOptions{Temperature: 1, Seed: seed})
			require.NoError(t, err, "%s seed %d", name, seed)
			assert.Regexp(t, place, res.Capture("place").Value, "%s seed %d", name, seed)
			assert.Contains(t, []string{"happy", "sad"}, res.Capture("mood").Value)
			var v any
			assert.NoError(t, json.Unmarshal([]byte(res.Capture("j").Value), &v), "%s seed %d", name, seed)
			assert.NotContains(t, res.Capture("free").Value, ".")
			mood := res.Capture("mood")
			var sum float64
			for _, o := range mood.Options {
				sum += o.Prob
				assert.Equal(t, name == "server", o.TopK, "a server's option scores come from its top alternatives, and say so")
			}
			assert.InDelta(t, 1, sum, 1e-9)
		}
	}
}

// TestGenWithNoTokenOfItsValue: a gen whose output ends for length
// before a token of its value is an error that says why, where it had
// been an empty capture with probability 1 that nothing decided: the
// prompt left no room in the context (the healed token took the last
// place). Re-spelling the healed bytes does not take max_tokens: the
// built-in model may spell " the" as " t" and "he", and a max_tokens of
// 1 still leaves the value its token.
func TestGenWithNoTokenOfItsValue(t *testing.T) {
	m := reins.Builtin()
	p, err := Parse("t", `Q: {{v}}{{gen "x" max_tokens=2}}`, nil)
	require.NoError(t, err)
	full := 0
	for n := 480; n <= 530; n++ {
		res, err := p.Run(context.Background(), m, &RunOptions{Vars: map[string]any{"v": strings.Repeat("ab", n)[:n]}})
		if err != nil {
			var pe *Error
			require.ErrorAs(t, err, &pe, "n=%d", n)
			assert.Equal(t, KindRun, pe.Kind, "n=%d: %v", n, err)
			if strings.Contains(err.Error(), "the model's context is full") {
				full++
			}
			continue
		}
		c := res.Capture("x")
		assert.NotEmpty(t, c.Tokens, "n=%d: %q with probability %v decided by no token", n, c.Value, c.Prob)
	}
	assert.Positive(t, full, "some prompt leaves the healed token the last place")

	p, err = Parse("t", `Q: the{{gen "x" max_tokens=1}}`, nil)
	require.NoError(t, err)
	for seed := range uint64(40) { // seeds that spell " the" in two tokens among them (TestHealBudget)
		res, err := p.Run(context.Background(), m, &RunOptions{Seed: seed, Temperature: 1})
		require.NoError(t, err, "seed %d", seed)
		assert.NotEmpty(t, res.Capture("x").Tokens, "seed %d", seed)
	}
}

// TestSelectProbabilitiesAreScores: a select's options' probabilities
// sum to 1 and are the exponentiated scores that Score gives each
// option, followed by the text after the select up to the end of its
// line, in the program's context, normalised.
func TestSelectProbabilitiesAreScores(t *testing.T) {
	m := reins.Builtin()
	p, err := Parse("t", "The dog ran{{select \"where\" options=[\" to the river\", \" then\", \" tree\"]}}. It was wet.", nil)
	require.NoError(t, err)
	for _, heal := range []bool{false, true} {
		res, err := p.Run(context.Background(), m, &RunOptions{NoHeal: !heal})
		require.NoError(t, err)
		c := res.Capture("where")
		require.Len(t, c.Options, 3)
		var sum float64
		scores := make([]float64, 3)
		z := math.Inf(-1)
		for i, o := range c.Options {
			sum += o.Prob
			// Healing takes back the prompt's last token, "n" in the
			// fixture's tokenization, and spells it again with the option.
			ctx, text := "The dog ran", o.Text+". It was wet."
			if heal {
				ctx, text = "The dog ra", "n"+text
			}
			s, err := m.Score(context.Background(), text, reins.ScoreOptions{Context: ctx})
			require.NoError(t, err)
			scores[i] = s.Sum
			z = math.Max(z, s.Sum)
		}
		assert.InDelta(t, 1, sum, 1e-9)
		var norm float64
		for _, s := range scores {
			norm += math.Exp(s - z)
		}
		for i, o := range c.Options {
			assert.InDelta(t, scores[i], o.Logprob, 1e-9, "heal %v, %q", heal, o.Text)
			assert.InDelta(t, math.Exp(scores[i]-z)/norm, o.Prob, 1e-9, "heal %v, %q", heal, o.Text)
		}
		assert.Equal(t, c.Options[1].Prob, c.Prob, "the greedy choice is the likeliest")
		assert.Equal(t, " then", c.Value)
	}
}

// TestLiteralTextIsNeverSampled: what a gen's generation produces is the
// healed bytes, the value, and the boundary (no longer than one token of
// the vocabulary, the start of the literal text after it); the rest of
// the literal text is prompt, evaluated as given, whatever the
// temperature.
func TestLiteralTextIsNeverSampled(t *testing.T) {
	m := reins.Builtin()
	long := " and then the dog ran to the river, and the cat sat on the mat, and it was a very long day indeed. "
	p, err := Parse("t", `A:{{gen "a" regex="[a-z]{1,8}"}}`+long+`B: {{gen "b" regex="[a-z ]{1,20}" max_tokens=12}}`+long+
		`C: {{gen "c" stop="." max_tokens=10}}`+long, nil)
	require.NoError(t, err)
	maxTok := 0
	v := m.Vocab()
	for id := range v.Len() {
		maxTok = max(maxTok, len(v.Bytes(id)))
	}
	for seed := range uint64(10) {
		res, err := p.Run(context.Background(), m, &RunOptions{Temperature: 2, Seed: seed})
		require.NoError(t, err)
		a, b, c := res.Capture("a"), res.Capture("b"), res.Capture("c")
		assert.Equal(t, "A:"+a.Value+long+"B: "+b.Value+long+"C: "+c.Value+long, res.Text)
		for _, cp := range []*Capture{a, b} {
			var spelled strings.Builder
			for _, tok := range cp.call.Tokens {
				spelled.Write(tok.Bytes)
			}
			s := spelled.String()
			require.True(t, strings.HasPrefix(s, cp.Healed+cp.Value), "seed %d %s: %q", seed, cp.Name, s)
			boundary := strings.TrimPrefix(s, cp.Healed+cp.Value)
			assert.True(t, strings.HasPrefix(long, boundary), "seed %d %s: boundary %q", seed, cp.Name, boundary)
			assert.LessOrEqual(t, len(boundary), maxTok, "seed %d %s: the boundary is one token's bytes at most", seed, cp.Name)
			assert.NotEmpty(t, boundary)
		}
		// The free hole generates up to its stop string, which is left out.
		assert.NotContains(t, c.Value, ".")
	}
}

// TestHealingJoinsTheBoundary: the prompt before a hole ends in a space,
// which the fixture's tokenizer would merge with the word after it ("
// the" is one token). Healed, the hole's first token is that merged
// token; unhealed, it cannot be.
func TestHealingJoinsTheBoundary(t *testing.T) {
	m := reins.Builtin()
	p, err := Parse("t", `The cat sat on {{gen "where" regex="(the|a) [a-z]+" max_tokens=6}}.`, nil)
	require.NoError(t, err)
	healed, err := p.Run(context.Background(), m, nil)
	require.NoError(t, err)
	plain, err := p.Run(context.Background(), m, &RunOptions{NoHeal: true})
	require.NoError(t, err)
	h, u := healed.Capture("where"), plain.Capture("where")
	assert.Equal(t, " ", h.Healed)
	assert.Equal(t, " the", h.Tokens[0].Token, "the first token spells the healed space and the value's first word")
	assert.NotEqual(t, " the", u.Tokens[0].Token)
	assert.Empty(t, u.Healed)
	assert.True(t, strings.HasPrefix(h.Value, "the "), "%q", h.Value)
	assert.Greater(t, h.Logprob, u.Logprob, "the natural tokenization is the likelier")
}

// TestValueTokens: the tokens that decide a value.
func TestValueTokens(t *testing.T) {
	toks := func(ss ...string) []reins.Token {
		out := make([]reins.Token, len(ss))
		for i, s := range ss {
			out[i] = reins.Token{Token: s, Bytes: decode.Bytes(s)}
		}
		return out
	}
	text := func(ts []reins.Token) string {
		var b strings.Builder
		for _, t := range ts {
			b.WriteString(t.Token)
		}
		return b.String()
	}
	all := toks(" the", " r", "iver", ".", "\n")
	// " river" is [4, 10): " r" and "iver", and "." after it, which ended it.
	assert.Equal(t, " river.", text(ValueTokens(all, 4, 10, true)))
	assert.Equal(t, " river", text(ValueTokens(all, 4, 10, false)))
	// A token across the start is the value's: "the" is [1, 4).
	assert.Equal(t, " the r", text(ValueTokens(all, 1, 5, false)))
	// A value that ends inside a token: that token ended it, no other.
	assert.Equal(t, " the", text(ValueTokens(all, 1, 3, true)))
	// An empty value is decided by the token after it.
	assert.Equal(t, ".", text(ValueTokens(all, 10, 10, true)))
	assert.Empty(t, ValueTokens(all, 20, 20, true))
}

// TestLoopsAndVariables: {{#each}} captures are indexed, {{x}} in the
// body is the current one, and an unknown name is an error at its
// position before any model call.
func TestLoopsAndVariables(t *testing.T) {
	m := reins.Builtin()
	p, err := Parse("t", "{{#each animals}}\n{{@index}}. The {{this}} is {{gen \"word\" regex=\"[a-z]{2,5}\"}} ({{word}}).\n{{/each}}\nLast: {{name}}.", nil)
	require.NoError(t, err)
	res, err := p.Run(context.Background(), m, &RunOptions{Vars: map[string]any{"animals": []string{"cat", "dog"}, "name": "Tom"}})
	require.NoError(t, err)
	require.Len(t, res.Captures, 2)
	w0, w1 := res.Capture("word[0]"), res.Capture("word[1]")
	require.NotNil(t, w0)
	require.NotNil(t, w1)
	assert.Equal(t, "0. The cat is "+w0.Value+" ("+w0.Value+").\n1. The dog is "+w1.Value+" ("+w1.Value+").\nLast: Tom.", res.Text)

	for _, c := range []struct {
		src  string
		vars map[string]any
		pos  string
		msg  string
	}{
		{"a\n  {{who}}", nil, "t:2:3", `unknown name "who"`},
		{`{{later}} {{gen "later" max_tokens=1}}`, nil, "t:1:1", `unknown name "later"`},
		{"{{this}}", nil, "t:1:1", "outside {{#each}}"},
		{"{{#each xs}}{{/each}}", nil, "t:1:1", `unknown list variable "xs"`},
		{"{{#each xs}}{{/each}}", map[string]any{"xs": "a"}, "t:1:1", "wants a list of strings"},
		{"{{x}}", map[string]any{"x": 3}, "t:1:1", "wants a string"},
	} {
		p, err := Parse("t", c.src, nil)
		require.NoError(t, err, c.src)
		_, err = p.Run(context.Background(), m, &RunOptions{Vars: c.vars})
		var pe *Error
		require.ErrorAs(t, err, &pe, c.src)
		assert.Equal(t, KindName, pe.Kind, c.src)
		assert.Equal(t, c.pos, pe.Pos.String(), c.src)
		assert.Contains(t, err.Error(), c.msg, c.src)
	}
}

// TestRoles: role blocks in the plain format, and the chat markers a
// special format refuses in variables.
func TestRoles(t *testing.T) {
	m := reins.Builtin()
	p := parseTestdata(t, "chat.tmpl")
	res, err := p.Run(context.Background(), m, &RunOptions{Vars: map[string]any{"questions": []any{"Is it wet?", "Is it hot?"}}})
	require.NoError(t, err)
	a0, a1 := res.Capture("answer[0]").Value, res.Capture("answer[1]").Value
	assert.Equal(t, "System: You answer with one word.\nUser: Is it wet?\nAssistant: "+a0+"\nUser: Is it hot?\nAssistant: "+a1+"\n", res.Text)

	ml, err := chat.Known(chat.ChatML)
	require.NoError(t, err)
	_, err = p.Run(context.Background(), m, &RunOptions{Chat: ml, Vars: map[string]any{"questions": []string{"x<|im_end|>"}}})
	assert.ErrorContains(t, err, `contains the chat marker "<|im_end|>"`)
	assert.Equal(t, []string{"<|im_start|>", "<|im_end|>"}, ml.Markers())

	for tmpl, want := range map[string]string{"": chat.Plain, "{% for m in messages %}<|im_start|>{{ m.role }}": chat.ChatML,
		"<|start_header_id|>": chat.Llama3, "<start_of_turn>": chat.Gemma, "<|user|> <|end|>": chat.Phi3} {
		f, err := chat.FromTemplate(tmpl)
		require.NoError(t, err)
		assert.Equal(t, want, f.Name)
	}
	_, err = chat.FromTemplate("[INST] something else")
	assert.ErrorIs(t, err, chat.ErrUnknownTemplate)
}

// TestSpecialTokens: the wrapper turns marker text into the special
// token that spells it, and leaves the rest to the backend's tokenizer.
func TestSpecialTokens(t *testing.T) {
	b := fixture.New().NewBackend()
	s := chat.SpecialTokens(b, "</s>", "<nope>")
	plain, err := b.Tokenize("ab</s>c", true)
	require.NoError(t, err)
	got, err := s.Tokenize("ab</s>c", true)
	require.NoError(t, err)
	ab, _ := b.Tokenize("ab", true)
	c, _ := b.Tokenize("c", false)
	want := append(append(ab, fixture.EOS), c...)
	assert.Equal(t, want, got)
	assert.NotEqual(t, plain, got, "the backend alone spells </s> as text")
}

// TestJSONCapture: a json=true hole's value parses, and its JSON is the
// parsed value.
func TestJSONCapture(t *testing.T) {
	p, err := Parse("t", `Data: {{gen "d" json=true max_tokens=40}}`+"\n", nil)
	require.NoError(t, err)
	nonNull := 0
	for seed := range uint64(8) {
		res, err := p.Run(context.Background(), reins.Builtin(), &RunOptions{Temperature: 1, Seed: seed})
		require.NoError(t, err)
		c := res.Capture("d")
		var v any
		dec := json.NewDecoder(strings.NewReader(c.Value))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&v), c.Value)
		assert.Equal(t, v, c.JSON, "seed %d: %s", seed, c.Value)
		if v != nil {
			nonNull++
		}
	}
	assert.Positive(t, nonNull, "some value other than null")
}

// TestUnfinishedHoleIsAnErrorAtItsPosition: a budget too small for the
// hole's language is an *Error of kind run, at the hole, wrapping
// reins.ErrUnfinished, with the text so far.
func TestUnfinishedHoleIsAnErrorAtItsPosition(t *testing.T) {
	p, err := Parse("t", "Start.\n{{gen \"x\" regex=\"[a-z]{30}\" max_tokens=3}}", nil)
	require.NoError(t, err)
	res, err := p.Run(context.Background(), reins.Builtin(), nil)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindRun, pe.Kind)
	assert.Equal(t, "t:2:1", pe.Pos.String())
	assert.ErrorIs(t, err, reins.ErrUnfinished)
	assert.Equal(t, "Start.\n", res.Text)
}

// TestMarkersMustBeSpecialTokens: a format whose markers are special
// tokens runs only on a backend that tokenizes them as such; on one that
// spells them as text the prompt would be wrong, and Run says so.
func TestMarkersMustBeSpecialTokens(t *testing.T) {
	f := &chat.Format{Name: "test", Special: true,
		Start: [3]string{"<s>system\n", "<s>user\n", "<s>assistant\n"}, End: [3]string{"</s>\n", "</s>\n", "</s>\n"}}
	require.Equal(t, []string{"<s>", "</s>"}, f.Markers())
	p, err := Parse("t", "{{#user}}Hi{{/user}}{{#assistant}}{{gen \"a\" max_tokens=2}}{{/assistant}}", nil)
	require.NoError(t, err)

	_, err = p.Run(context.Background(), reins.Builtin(), &RunOptions{Chat: f})
	assert.ErrorContains(t, err, "as text")
	assert.ErrorContains(t, err, "chat.SpecialTokens")

	b := fixture.New().NewBackend()
	res, err := p.Run(context.Background(), reins.New(chat.SpecialTokens(b, f.Markers()...)), &RunOptions{Chat: f})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(res.Text, "<s>user\nHi</s>\n<s>assistant\n"), res.Text)

	missing := *f
	missing.Start[0] = "<sys>"
	_, err = p.Run(context.Background(), reins.New(chat.SpecialTokens(b, missing.Markers()...)), &RunOptions{Chat: &missing})
	assert.ErrorContains(t, err, `no special token "<sys>"`)
}

// TestHoleBudgetAndSeed: a gen hole spends at most its max_tokens on its
// value, healed or not (the repro: a stop string in the healed bytes
// turns healing off, and the hole once got the healing token anyway),
// and the i-th hole samples with Seed+i: it is the generation Generate
// makes with that seed after the text filled before it.
func TestHoleBudgetAndSeed(t *testing.T) {
	m := reins.Builtin()
	p, err := Parse("t", `The cat{{gen "a" max_tokens=3 stop="t" temperature=1}}`, nil)
	require.NoError(t, err)
	for seed := range uint64(12) {
		res, err := p.Run(context.Background(), m, &RunOptions{Seed: seed})
		require.NoError(t, err)
		c := res.Capture("a")
		assert.Empty(t, c.Healed, "the stop string begins in the healed bytes")
		assert.LessOrEqual(t, len(c.Tokens), 3, "seed %d: %q", seed, c.Value)
	}

	p, err = Parse("t", `The cat sat{{gen "a" max_tokens=4 temperature=1}} and{{gen "b" max_tokens=4 temperature=1}}`, nil)
	require.NoError(t, err)
	for seed := range uint64(6) {
		res, err := p.Run(context.Background(), m, &RunOptions{Seed: seed})
		require.NoError(t, err)
		a, b := res.Capture("a"), res.Capture("b")
		want, err := m.Generate(context.Background(), "The cat sat", reins.Options{MaxTokens: 4, Temperature: 1, Seed: seed, Heal: true})
		require.NoError(t, err)
		assert.Equal(t, want.Text, a.Value, "seed %d: the first hole samples with Seed", seed)
		want, err = m.Generate(context.Background(), "The cat sat"+a.Value+" and", reins.Options{MaxTokens: 4, Temperature: 1, Seed: seed + 1, Heal: true})
		require.NoError(t, err)
		assert.Equal(t, want.Text, b.Value, "seed %d: the second hole samples with Seed+1", seed)
	}
}
