package llama

import (
	"fmt"

	"github.com/ollama/ollama/llama"

	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/vocab"
)

// Tokenizer is llama.cpp's tokenizer for a vocabulary, loaded from any
// GGUF file, vocabulary-only ones included.
type Tokenizer struct {
	model *llama.Model
	vocab *vocab.Vocab
}

// LoadTokenizer loads the vocabulary and tokenizer of a GGUF file
// without its weights.
func LoadTokenizer(path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	spec, err := vocab.SpecFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	backendInit.Do(llama.BackendInit)
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{VocabOnly: true, Progress: func(float32) {}})
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: llama.cpp refused it: %w", path, err)
	}
	spec.AddBOS = m.AddBOSToken()
	v, err := vocab.New(spec)
	if err != nil {
		llama.FreeModel(m)
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return &Tokenizer{model: m, vocab: v}, nil
}

// Vocab returns the vocabulary.
func (t *Tokenizer) Vocab() *vocab.Vocab { return t.vocab }

// Tokenize tokenizes text, with BOS when addSpecial and the model uses it.
func (t *Tokenizer) Tokenize(text string, addSpecial bool) ([]int, error) {
	if t.model == nil {
		return nil, ErrClosed
	}
	return t.model.Tokenize(text, addSpecial, false)
}

// Close frees the tokenizer.
func (t *Tokenizer) Close() {
	if t.model != nil {
		llama.FreeModel(t.model)
		t.model = nil
	}
}
