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
	"log/slog"
	"os"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/extract"
)

func main() {
	m := model()
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

func model() *reins.Model {
	if len(os.Args) < 2 {
		return reins.Builtin()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	lm, err := llama.Load(os.Args[1], llama.Options{Sequences: 2})
	if err != nil {
		log.Fatal(err)
	}
	return reins.New(lm)
}
