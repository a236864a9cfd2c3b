// Example logprobs loads a GGUF model, generates a continuation with the
// top alternatives of every token, and scores a text token by token.
//
//	go run ./examples/logprobs [MODEL.gguf]
//
// Without an argument it uses reins' built-in bigram test model.
package main

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/examples/internal/examplemodel"
)

func main() {
	m := examplemodel.Load(0)
	defer m.Close()

	ctx := context.Background()
	c, err := m.Generate(ctx, "Once upon a time", reins.Options{MaxTokens: 12, TopLogprobs: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("text: %q (%s)\n", c.Text, c.FinishReason)
	for _, t := range c.Tokens {
		fmt.Printf("%-10q p=%.3f  alternatives:", t.Token, math.Exp(t.Logprob))
		for _, alt := range t.TopLogprobs[1:] {
			fmt.Printf(" %q %.3f", alt.Token, math.Exp(alt.Logprob))
		}
		fmt.Println()
	}

	s, err := m.Score(ctx, "The cat sat on the mat.", reins.ScoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range s.Tokens {
		fmt.Printf("%q %.2f  ", t.Token, t.Logprob)
	}
	fmt.Printf("\nsum %.2f, mean %.2f\n", s.Sum, s.Mean)
}
