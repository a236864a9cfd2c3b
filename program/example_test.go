package program_test

import (
	"context"
	"fmt"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/program"
)

// A program with a constrained hole and a choice, on the built-in model
// (a bigram table: its text reads like bad English).
func ExampleProgram_Run() {
	p, err := program.Parse("example", `The dog ran{{select "where" options=[" to the river", " then", " tree"]}}. It sat on the {{gen "what" regex="[a-z]{2,6}"}}.`, nil)
	if err != nil {
		panic(err)
	}
	res, err := p.Run(context.Background(), reins.Builtin(), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	for _, o := range res.Capture("where").Options {
		fmt.Printf("%-15q p=%.4f\n", o.Text, o.Prob)
	}
	what := res.Capture("what")
	fmt.Printf("what=%q p=%.4f over %d tokens\n", what.Value, what.Prob, len(what.Tokens))
	// Output:
	// The dog ran then. It sat on the sater.
	// " to the river" p=0.0020
	// " then"         p=0.9772
	// " tree"         p=0.0207
	// what="sater" p=0.0107 over 5 tokens
}

func ExampleParse_error() {
	_, err := program.Parse("t.tmpl", "Answer: {{gen \"a\" regex=\"[0-9]+\" schema=\"s.json\"}}", nil)
	fmt.Println(err)
	// Output:
	// t.tmpl:1:34: gen "a" has two constraints: regex (at t.tmpl:1:19) and schema; give one
}
