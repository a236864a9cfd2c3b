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
// without its weights. The file is checked first, as by Load (any
// architecture: llama.cpp reads none of its keys for a vocabulary).
// llama.cpp's messages are discarded; when it refuses the file, the
// error quotes them.
func LoadTokenizer(path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if err := checkVocabFile(f); err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	spec, err := vocab.SpecFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	m, err := loadVocabOnly(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	spec.AddBOS = m.AddBOSToken()
	v, err := vocab.New(spec)
	if err != nil {
		llama.FreeModel(m)
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return &Tokenizer{model: m, vocab: v}, nil
}

// loadVocabOnly loads a file's vocabulary in llama.cpp, its messages
// kept for the error and otherwise discarded.
func loadVocabOnly(path string) (*llama.Model, error) {
	logMu.Lock()
	defer logMu.Unlock()
	sink := newSink(nil, installed())
	defer sink.close()
	backendInit.Do(llama.BackendInit)
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{VocabOnly: true, Progress: func(float32) {}})
	if err != nil {
		return nil, explain(fmt.Errorf("llama.cpp refused it: %w", err), sink.endCapture())
	}
	return m, nil
}

// Vocab returns the vocabulary.
func (t *Tokenizer) Vocab() *vocab.Vocab { return t.vocab }

// Tokenize tokenizes text, with BOS when addSpecial and the model uses it.
func (t *Tokenizer) Tokenize(text string, addSpecial bool) ([]int, error) {
	if t.model == nil {
		return nil, ErrClosed
	}
	if err := checkTokenizeLen(text); err != nil {
		return nil, err
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
