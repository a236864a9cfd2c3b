// Example classify labels reviews with a program's select: each label
// is scored in full in context, followed by the text after it, and comes
// back with its probability among the labels.
//
//	go run ./examples/classify [MODEL.gguf]
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
	p, err := program.ParseFile("testdata/programs/classify.tmpl")
	if err != nil {
		log.Fatal(err)
	}
	for _, review := range []string{
		"The soup was cold and the waiter never came back.",
		"Lovely little place, we will come again!",
		"It was a restaurant.",
	} {
		res, err := p.Run(context.Background(), m, &program.RunOptions{Vars: map[string]any{"review": review}})
		if err != nil {
			log.Fatal(err)
		}
		s := res.Capture("sentiment")
		fmt.Printf("%q\n  sentiment %s (stars %s)\n", review, s.Value, res.Capture("stars").Value)
		for _, o := range s.Options {
			fmt.Printf("    %-9s p=%.4f  logprob %.3f\n", o.Text, o.Prob, o.Logprob)
		}
	}
}
