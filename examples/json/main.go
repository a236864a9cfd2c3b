// Example json forces a model's output into a Go type: the schema comes
// from the type (field names, required fields, integer ranges, enums and
// bounds from struct tags), every output is complete and valid, and the
// probability of every token comes with it.
//
//	go run ./examples/json [MODEL.gguf]
//
// Without an argument it uses reins' built-in bigram test model, whose
// text reads like bad English; ../shared/models/stories260K.gguf reads
// like a children's story.
package main

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/examples/internal/examplemodel"
)

// Character is what the model fills in.
type Character struct {
	Name    string   `json:"name" jsonschema:"minLength=2,maxLength=12"`
	Species string   `json:"species" jsonschema:"enum=cat,enum=dog,enum=bird,enum=girl,enum=boy"`
	Age     uint8    `json:"age" jsonschema:"maximum=12"`
	Friends []string `json:"friends,omitempty" jsonschema:"maxItems=2"`
}

func main() {
	m := examplemodel.Load(0)
	defer m.Close()

	for seed := range uint64(3) {
		c, out, err := reins.GenerateJSON[Character](context.Background(), m, "Once upon a time there was", reins.Options{
			Temperature: 0.8, Seed: seed, MaxTokens: 80,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s\n  %+v\n  ", out.Text, c)
		// The least certain token the model chose freely (forced tokens,
		// the schema's punctuation and keys, are certain).
		least, p := "", 1.0
		for _, t := range out.Tokens {
			if !t.Forced && math.Exp(t.Constrained.Logprob) < p {
				least, p = t.Token, math.Exp(t.Constrained.Logprob)
			}
		}
		fmt.Printf("least certain free token: %q at p=%.3f (under the schema)\n", least, p)
	}
}
