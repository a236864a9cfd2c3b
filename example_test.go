package reins_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/reins-go/reins"
)

// The examples run on reins' built-in model, a bigram table over bytes
// computed in Go: its text reads like bad English, and its
// probabilities are exact. With a real model, load a GGUF file instead:
//
//	lm, err := llama.Load("model.gguf", llama.Options{}) // github.com/reins-go/reins/backends/llama
//	m := reins.New(lm)
//	defer m.Close()

func ExampleModel_Generate() {
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "The cat", reins.Options{MaxTokens: 4, TopLogprobs: 2})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q (%s)\n", out.Text, out.FinishReason)
	for _, t := range out.Tokens {
		fmt.Printf("%-6q p=%.3f  best alternative %q\n", t.Token, math.Exp(t.Logprob), t.TopLogprobs[1].Token)
	}
	// Output:
	// " sat" (length)
	// " "    p=0.368  best alternative "er"
	// "s"    p=0.166  best alternative "c"
	// "a"    p=0.323  best alternative "u"
	// "t"    p=0.559  best alternative "n"
}

func ExampleRegex() {
	m := reins.Builtin()
	re, err := reins.Regex(`(yes|no), because [a-z ]{3,20}\.`)
	if err != nil {
		panic(err)
	}
	out, err := m.Generate(context.Background(), "Is the sun hot?", reins.Options{Constraint: re, MaxTokens: 30})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	// The constrained distribution is reported beside the model's.
	first := out.Tokens[0]
	fmt.Printf("%q: model p=%.4f, constrained p=%.4f\n", first.Token, math.Exp(first.Logprob), math.Exp(first.Constrained.Logprob))
	// Output:
	// no, because sat sat sat sat s.
	// "n": model p=0.0038, constrained p=0.5000
}

func ExampleGenerateJSON() {
	type Pet struct {
		Name    string   `json:"name" jsonschema:"maxLength=8"`
		Kind    string   `json:"kind" jsonschema:"enum=cat,enum=dog,enum=bird"`
		Age     uint8    `json:"age" jsonschema:"maximum=30"`
		Friends []string `json:"friends,omitempty" jsonschema:"maxItems=2"`
	}
	m := reins.Builtin()
	pet, out, err := reins.GenerateJSON[Pet](context.Background(), m, "The dog", reins.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	fmt.Printf("%+v\n", pet)
	// Output:
	// {"age":0,"friends":[" sat sat sat sat sat sat sat sat"," sat sat sat sat sat sat sat sat"],"kind":"bird","name":" sat sat"}
	// {Name: sat sat Kind:bird Age:0 Friends:[ sat sat sat sat sat sat sat sat  sat sat sat sat sat sat sat sat]}
}

func ExampleJSONSchema() {
	schema := []byte(`{"type": "object",
		"properties": {"answer": {"enum": ["yes", "no"]}, "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
		"required": ["answer", "confidence"]}`)
	c, err := reins.JSONSchema(schema, nil)
	if err != nil {
		panic(err)
	}
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "Is the river wet?", reins.Options{Constraint: c, Temperature: 0.8, Seed: 4})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	fmt.Println(out.Value.(map[string]any)["answer"])
	// Output:
	// {"confidence":35,"answer":"no"}
	// no
}

func ExampleModel_Choose() {
	m := reins.Builtin()
	sel, err := m.Choose(context.Background(), "The dog ran", []string{" the river", " then", " tree"}, reins.ChooseOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("chose %q\n", sel.Choice)
	for _, o := range sel.Options {
		fmt.Printf("%-12q p=%.4f logprob=%.3f\n", o.Text, o.Prob, o.Logprob)
	}
	// Output:
	// chose " then"
	// " the river" p=0.0483 logprob=-7.380
	// " then"      p=0.9344 logprob=-4.418
	// " tree"      p=0.0172 logprob=-8.412
}

func ExampleModel_Score() {
	m := reins.Builtin()
	res, err := m.Score(context.Background(), " sat on the mat.", reins.ScoreOptions{Context: "The cat"})
	if err != nil {
		panic(err)
	}
	for _, t := range res.Tokens {
		fmt.Printf("%q %.3f\n", t.Token, t.Logprob)
	}
	fmt.Printf("sum %.3f over %d tokens\n", res.Sum, len(res.Tokens))
	// Output:
	// " " -0.999
	// "s" -1.799
	// "a" -1.131
	// "t" -0.581
	// " " -0.999
	// "on" -3.590
	// " the" -1.197
	// " " -0.393
	// "m" -3.590
	// "a" -1.461
	// "t" -0.581
	// "." -2.098
	// sum -18.418 over 12 tokens
}

func ExampleModel_Stream() {
	m := reins.Builtin()
	s := m.Stream(context.Background(), "Once upon", reins.Options{MaxTokens: 8})
	for t := range s.Tokens() {
		fmt.Printf("[%s]", t.Token)
	}
	fmt.Println()
	if err := s.Err(); err != nil {
		panic(err)
	}
	fmt.Println(s.Completion().FinishReason)
	// Output:
	// [ the][ ][s][a][t][ ][s][a]
	// length
}

func ExampleGrammar() {
	g, err := reins.Grammar(`root ::= "(" expr ")"
expr ::= [0-9]+ (("+" | "*") [0-9]+)*`)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Match([]byte("(1+2*3)")))
	fmt.Println(g.Match([]byte("(1+)")))
	// Output:
	// <nil>
	// rejected at byte 3 (line 1, column 4): ')' is not allowed; expected '0'-'9'
}

// A budget too small for any output is an error, never a cut output.
func ExampleUnfinishedError() {
	c, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"name": {"type": "string", "minLength": 20}}, "required": ["name"]}`), nil)
	if err != nil {
		panic(err)
	}
	_, err = reins.Builtin().Generate(context.Background(), "x", reins.Options{Constraint: c, MaxTokens: 10})
	var u *reins.UnfinishedError
	fmt.Println(errors.Is(err, reins.ErrUnfinished), errors.As(err, &u))
	fmt.Println(err)
	// Output:
	// true true
	// the output is unfinished: a budget of 10 tokens cannot hold the output: the shortest way to finish it takes 31
}

func ExampleModel_GenerateN() {
	m := reins.Builtin()
	outs, err := m.GenerateN(context.Background(), "The dog", 3, reins.Options{MaxTokens: 6, Temperature: 1, Seed: 1})
	if err != nil {
		panic(err)
	}
	for i, out := range outs {
		fmt.Printf("%d %q logprob %.2f\n", i, out.Text, out.Logprob())
	}
	// Output:
	// 0 " er the rd" logprob -14.83
	// 1 "htl rd" logprob -10.44
	// 2 " in the og" logprob -7.86
}

// Under a Choice, Generate scores every option in full and returns the
// most probable (or samples one), with every option's probability.
func ExampleChoice() {
	c, err := reins.Choice(" the river", " then", " tree")
	if err != nil {
		panic(err)
	}
	out, err := reins.Builtin().Generate(context.Background(), "The dog ran", reins.Options{Constraint: c})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", out.Text)
	for _, o := range out.Options {
		fmt.Printf("%q %.3f\n", o.Text, o.Prob)
	}
	// Output:
	// " then"
	// " the river" 0.048
	// " then" 0.934
	// " tree" 0.017
}

func ExampleJSONFor() {
	type Answer struct {
		Verdict string `json:"verdict" jsonschema:"enum=yes,enum=no"`
		Score   int8   `json:"score"`
	}
	c, err := reins.JSONFor[Answer]()
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Match([]byte(`{"verdict":"yes","score":-3}`)))
	fmt.Println(c.Match([]byte(`{"verdict":"yes","score":300}`)) != nil) // 300 is no int8
	// Output:
	// <nil>
	// true
}

func ExampleConstraint_Check() {
	c := reins.JSON()
	err := c.Check(strings.NewReader(`{"a":[1,2,}`))
	var rej *reins.RejectError
	if errors.As(err, &rej) {
		fmt.Println(rej.Offset, rej.Line, rej.Col)
	}
	fmt.Println(err)
	// Output:
	// 10 1 11
	// rejected at byte 10 (line 1, column 11): '}' is not allowed; expected '"', '-', '0'-'9', '[', 'f', 'n', 't', '{'
}

// A prefill decides the output's beginning: the model continues it and
// the constraint starts past it; the whole output is Prefill+Text.
func ExampleModel_Generate_prefill() {
	m := reins.Builtin()
	c, err := reins.JSONSchema([]byte(`{"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["pet", "n"], "additionalProperties": false}`), nil)
	if err != nil {
		panic(err)
	}
	out, err := m.Generate(context.Background(), "The", reins.Options{Constraint: c, Prefill: `{"pet":"dog",`})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Prefill + out.Text)
	fmt.Println(out.Value)
	// Output:
	// {"pet":"dog","n":0}
	// map[n:0 pet:dog]
}

// Token healing: a prompt that ends in a space would force the output to
// start after a lone space token; healed, the first token spells the
// space again with the word.
func ExampleModel_Generate_heal() {
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "The cat sat on ", reins.Options{MaxTokens: 3, Heal: true})
	if err != nil {
		panic(err)
	}
	// The budget gets a token more for the one that spells " " again.
	fmt.Printf("healed %q, first token %q, text %q, %d tokens\n", out.Healed, out.Tokens[0].Token, out.Text, len(out.Tokens))
	// Output:
	// healed " ", first token " the", text "the sa", 4 tokens
}

func ExampleModel_Tokenize() {
	m := reins.Builtin()
	ids, err := m.Tokenize("The cat", false)
	if err != nil {
		panic(err)
	}
	v := m.Vocab()
	for _, id := range ids {
		fmt.Printf("%d %q\n", id, v.Bytes(id))
	}
	// Output:
	// 86 "T"
	// 259 "he"
	// 34 " "
	// 101 "c"
	// 99 "a"
	// 118 "t"
}

func ExampleJSON() {
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "The cat", reins.Options{Constraint: reins.JSON(), Temperature: 0.8, Seed: 1, MaxTokens: 12})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: a %T\n", out.Text, out.Value)
	// Output:
	// true: a bool
}

func ExampleJSONSchemaFile() {
	c, err := reins.JSONSchemaFile("testdata/schemas/person.json", nil)
	if err != nil {
		panic(err)
	}
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "Anna is 31.", reins.Options{Constraint: c, Temperature: 0.8, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	// Output:
	// {"age":97,"name":"nd the on the ratlle d mMiratter","tags":[],"email":"Ylee.n.6~at.WPIndovereBcatl@WYlendsundoghtter.Dhendover.7ThencatlendoghExLinHuponsatl.C04370eencattlendsatersandogh"}
}

func ExampleGrammarFile() {
	c, err := reins.GrammarFile("testdata/grammars/answer.gbnf")
	if err != nil {
		panic(err)
	}
	m := reins.Builtin()
	out, err := m.Generate(context.Background(), "Is the cat on the mat? ", reins.Options{Constraint: c, Temperature: 0.8, Seed: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Text)
	// Output:
	// no, because s.
}
