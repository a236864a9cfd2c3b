// Package examplemodel loads the model an example runs on: the GGUF file
// named as the program's first argument, through llama.cpp, or reins'
// built-in model when there is none.
package examplemodel

import (
	"log"
	"log/slog"
	"os"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/llama"
)

// Load returns the model; sequences is how many the example runs at
// once (0: llama.cpp's default). It exits with the error on failure, as
// an example may.
func Load(sequences int) *reins.Model {
	if len(os.Args) < 2 {
		return reins.Builtin()
	}
	// llama.cpp's log goes to Options.Logger (nil: discarded); the
	// ollama module's own Go code logs through slog's default logger,
	// which a program may quiet as it likes.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	lm, err := llama.Load(os.Args[1], llama.Options{Sequences: sequences})
	if err != nil {
		log.Fatal(err)
	}
	return reins.New(lm)
}
