// Example program runs a template with several holes (free text under a
// regex, a number, a choice among options, a JSON value under a schema),
// built once from the template file and once with the Go builder, and
// prints every capture with its probability.
//
//	go run ./examples/program [MODEL.gguf]
//
// Without an argument it uses reins' built-in bigram model; with a GGUF
// file, that model through llama.cpp. Run it from the module root.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/reins-go/reins/examples/internal/examplemodel"
	"github.com/reins-go/reins/program"
)

func main() {
	m := examplemodel.Load(0)
	defer m.Close()
	ctx := context.Background()

	// From a template file: grammar= and schema= files load from its folder.
	p, err := program.ParseFile("testdata/programs/quiz.tmpl")
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Run(ctx, m, &program.RunOptions{Vars: map[string]any{"animal": "dog"}})
	if err != nil {
		log.Fatal(err)
	}
	show(res)

	// The same kind of program in Go.
	b := program.NewBuilder()
	b.Text("Once upon a time there was a ").Gen("who", program.GenOptions{Regex: `[a-z]{2,10}`, MaxTokens: 6})
	b.Text(". Every day ").Var("who").Text(" went to the ").Select("where", "park", "river", "school")
	b.Text(".\nThe end.")
	p, err = b.Program()
	if err != nil {
		log.Fatal(err)
	}
	if res, err = p.Run(ctx, m, nil); err != nil {
		log.Fatal(err)
	}
	show(res)
}

func show(res *program.Result) {
	fmt.Println(res.Text)
	for _, c := range res.Captures {
		fmt.Printf("  %-8s %-40q p=%.4f logprob %.3f (constrained %.3f), %d tokens\n", c.Name, c.Value, c.Prob, c.Logprob, c.Constrained, len(c.Tokens))
		for _, o := range c.Options {
			fmt.Printf("      option %-8q p=%.4f\n", o.Text, o.Prob)
		}
	}
	fmt.Println()
}
