// Example extract pulls a JSON value valid against a schema out of each
// document in testdata/extract, with the confidence of every field (and,
// for enums and booleans, every alternative's probability), several
// documents at once.
//
//	go run ./examples/extract [MODEL.gguf]
//
// Without an argument it uses reins' built-in bigram model; with a GGUF
// file, that model through llama.cpp. Run it from the module root.
package main

import (
	"context"
	"log"
	"os"

	"github.com/reins-go/reins/examples/internal/examplemodel"
	"github.com/reins-go/reins/extract"
)

func main() {
	m := examplemodel.Load(2)
	defer m.Close()
	x, err := extract.NewFile(m, "testdata/extract/person.schema.json", nil)
	if err != nil {
		log.Fatal(err)
	}
	docs, err := extract.ReadInputs([]string{"testdata/extract/docs", "testdata/extract/more.jsonl"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// One JSON line per document, in the documents' order.
	st, err := x.Run(context.Background(), docs, os.Stdout, &extract.RunOptions{Concurrency: 2})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%d done, %d failed", st.Done, st.Failed)
}
