package llama

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/vocab"
)

// Options configures Load. The zero value is sensible.
type Options struct {
	// ContextSize is the most tokens one sequence holds; 0 means the
	// model's training context, capped at 4096. llama.cpp rounds it up to
	// a multiple of 256.
	ContextSize int
	// Sequences is how many independent sequences (branches) the model
	// keeps at once; 0 means 1. The KV cache holds ContextSize tokens for
	// each.
	Sequences int
	// Threads is how many CPU threads llama.cpp uses; 0 means all cores.
	Threads int
	// BatchSize is how many tokens of one sequence are evaluated per
	// llama.cpp call; 0 means 512.
	BatchSize int
	// GPULayers is how many layers to offload to a GPU, if llama.cpp was
	// built with one.
	GPULayers int
}

func (o *Options) fill() error {
	switch {
	case o.ContextSize < 0:
		return fmt.Errorf("context size %d: want ≥ 0", o.ContextSize)
	case o.Sequences < 0:
		return fmt.Errorf("sequences %d: want ≥ 0", o.Sequences)
	case o.Threads < 0:
		return fmt.Errorf("threads %d: want ≥ 0", o.Threads)
	case o.BatchSize < 0:
		return fmt.Errorf("batch size %d: want ≥ 0", o.BatchSize)
	}
	if o.Sequences == 0 {
		o.Sequences = 1
	}
	if o.Threads == 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.BatchSize == 0 {
		o.BatchSize = 512
	}
	return nil
}

// Model is a GGUF model loaded in llama.cpp. It implements
// decode.Backend. It is not safe for concurrent use; Close frees it.
type Model struct {
	path    string
	vocab   *vocab.Vocab
	model   *llama.Model
	ctx     *llama.Context
	batch   *llama.Batch
	opts    Options
	nCtx    int
	nLog    int
	cached  [][]int       // cached[s]: the tokens whose KV sequence s holds
	plan    []plan        // scratch for Eval
	decoded int           // tokens evaluated by llama.cpp so far (for tests of cache reuse)
	inLlama time.Duration // time spent in llama.cpp decode
}

var _ decode.Backend = (*Model)(nil)

// backendInit initialises llama.cpp once per process: llama_backend_init
// sets process-wide state in C, which is why this is package-level.
var backendInit sync.Once

// Load loads a model from a GGUF file path, or from an Ollama model name
// prefixed "ollama:" (see ResolveOllama). The file is checked first: a
// missing, empty, truncated or non-GGUF file is an error, not a crash.
func Load(name string, opts Options) (*Model, error) {
	if err := opts.fill(); err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	path := name
	if strings.HasPrefix(name, OllamaPrefix) {
		var err error
		if path, err = ResolveOllama(name); err != nil {
			return nil, err
		}
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	arch := f.Architecture()
	if arch == "" {
		return nil, fmt.Errorf("load model %s: no general.architecture key: not a model file", path)
	}
	if len(f.Tensors) == 0 {
		return nil, fmt.Errorf("load model %s: it has no tensors (a vocabulary-only file? use vocab.Load)", path)
	}
	spec, err := vocab.SpecFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	if opts.ContextSize == 0 {
		opts.ContextSize = 4096
		if n, ok := f.Int(arch + ".context_length"); ok && n > 0 && n < int64(opts.ContextSize) {
			opts.ContextSize = int(n)
		}
	}

	backendInit.Do(llama.BackendInit)
	m := &Model{path: path, opts: opts}
	// A progress callback of our own keeps llama.cpp from printing dots.
	m.model, err = llama.LoadModelFromFile(path, llama.ModelParams{NumGpuLayers: opts.GPULayers, UseMmap: true, Progress: func(float32) {}})
	if err != nil {
		return nil, fmt.Errorf("load model %s: llama.cpp refused it: %w", path, err)
	}
	spec.AddBOS = m.model.AddBOSToken()
	if m.vocab, err = vocab.New(spec); err != nil {
		m.Close()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	if m.nLog = m.model.NumVocab(); m.nLog != m.vocab.Len() {
		m.Close()
		return nil, fmt.Errorf("load model %s: llama.cpp sees %d tokens, the file lists %d", path, m.nLog, m.vocab.Len())
	}
	params := llama.NewContextParams(opts.ContextSize*opts.Sequences, opts.BatchSize, opts.Sequences, opts.Threads, ml.FlashAttentionDisabled, "")
	if m.ctx, err = llama.NewContextWithModel(m.model, params); err != nil {
		m.Close()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	m.nCtx = contextPerSequence(m.ctx)
	if m.batch, err = llama.NewBatch(opts.BatchSize, opts.Sequences, 0); err != nil {
		m.Close()
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	m.cached = make([][]int, opts.Sequences)
	return m, nil
}

// Close frees the model, its context and its batch. It is safe to call
// more than once.
func (m *Model) Close() error {
	if m.batch != nil {
		m.batch.Free()
		m.batch = nil
	}
	if m.ctx != nil {
		freeContext(m.ctx)
		m.ctx = nil
	}
	if m.model != nil {
		llama.FreeModel(m.model)
		m.model = nil
	}
	return nil
}

// LlamaTime returns the time spent inside llama.cpp's decode since the
// model was loaded, to tell llama.cpp's share of a generation from reins'.
func (m *Model) LlamaTime() time.Duration { return m.inLlama }

// Path returns the GGUF file the model was loaded from.
func (m *Model) Path() string { return m.path }

// Vocab returns the model's vocabulary.
func (m *Model) Vocab() *vocab.Vocab { return m.vocab }

// NumLogits returns the length of the model's logit vectors.
func (m *Model) NumLogits() int { return m.nLog }

// ContextSize returns the most tokens one sequence holds.
func (m *Model) ContextSize() int { return m.nCtx }

// MaxSequences returns Options.Sequences.
func (m *Model) MaxSequences() int { return m.opts.Sequences }

// ErrClosed is returned by a Model's methods after Close.
var ErrClosed = errors.New("llama: model is closed")

// Tokenize turns text into tokens with llama.cpp's tokenizer. With
// addSpecial it adds BOS (or what else the model puts around a prompt).
// Special tokens written in the text are not parsed: "<s>" is three
// characters.
func (m *Model) Tokenize(text string, addSpecial bool) ([]int, error) {
	if m.model == nil {
		return nil, ErrClosed
	}
	return m.model.Tokenize(text, addSpecial, false)
}
