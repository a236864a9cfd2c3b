// Example schema forces a model's output into a JSON Schema: every
// output is complete and valid, and each field comes with the
// probability of the tokens that decided it (tokens the schema forced
// count as certain).
//
//	go run ./examples/schema [MODEL.gguf]
//
// Without an argument it uses reins' built-in bigram model (pure Go,
// instant; its text reads like bad English); with a GGUF file, that
// model through llama.cpp. Run it from the module root.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/reins-go/reins/examples/internal/examplemodel"
	"github.com/reins-go/reins/extract"
)

const schema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "species": {"enum": ["cat", "dog", "bird"]},
    "age": {"type": "integer", "minimum": 0, "maximum": 20},
    "kind": {"const": "pet"}
  },
  "required": ["name", "species", "age", "kind"],
  "additionalProperties": false
}`

func main() {
	m := examplemodel.Load(0)
	defer m.Close()
	// extract.New wraps reins.JSONSchema and adds a confidence per field;
	// reins.JSONSchema alone gives the constraint for m.Generate.
	x, err := extract.New(m, []byte(schema), &extract.Options{Instructions: "Describe a pet."})
	if err != nil {
		log.Fatal(err)
	}
	res, err := x.Extract(context.Background(), "Once upon a time there was a little dog called Max.")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Value))
	for _, f := range res.Fields {
		fmt.Printf("  %-9s %-14s confidence %.4f  raw %.2e", f.Pointer, f.Value, f.Confidence, f.Raw)
		for _, a := range f.Alternatives {
			fmt.Printf("  %s=%.3f", a.Value, a.Prob)
		}
		fmt.Println()
	}
}

// model loads the GGUF file named on the command line, or the built-in
// model.
