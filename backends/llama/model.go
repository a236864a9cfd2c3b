package llama

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/vocab"
)

// Options configures Load. The zero value is sensible: every zero field
// gets a default that fits the model (see each field). Load refuses a
// value out of range with a *decode.OptionError naming the field.
type Options struct {
	// ContextSize is the most tokens one sequence holds, from 1 to
	// MaxContextSize; 0 means the model's training context, capped at
	// 4096. llama.cpp rounds it up to a multiple of 256.
	ContextSize int
	// Sequences is how many independent sequences (branches, concurrent
	// calls) the model keeps at once, from 1 to MaxSequences; the KV
	// cache holds ContextSize tokens for each. 0 means as many as fit
	// in DefaultKVCacheBytes of KV cache, from 1 to DefaultMaxSequences.
	Sequences int
	// Threads is how many CPU threads llama.cpp uses, from 1 to
	// MaxThreads(); 0 picks by the model's size (see DefaultThreads).
	Threads int
	// BatchSize is how many tokens of one sequence are evaluated per
	// llama.cpp call, from 1 to MaxBatchSize; 0 means 512.
	BatchSize int
	// GPULayers is how many layers to offload to a GPU, if llama.cpp was
	// built with one; at least 0.
	GPULayers int
	// Logger receives llama.cpp's log messages (with the attribute
	// source=llama.cpp), at their levels; nil discards them. llama.cpp
	// has one log for the whole process: messages printed during this
	// Load go to this logger; later ones go to the logger of the most
	// recent Load whose model is still open (see the package comment).
	// The Go code of ollama's binding, which reins loads llama.cpp
	// through, logs a line or two of its own at the first Load (the CPU
	// features it found) through slog's default logger, which Logger
	// does not replace: set slog.SetDefault to quiet or route them.
	Logger *slog.Logger
}

// Limits and defaults of Options.
const (
	// MaxContextSize bounds Options.ContextSize: a million tokens, past
	// any model reins runs. The KV cache must also fit in the machine's
	// memory.
	MaxContextSize = 1 << 20
	// MaxSequences is llama.cpp's limit (LLAMA_MAX_SEQ).
	MaxSequences = 256
	// MaxBatchSize bounds Options.BatchSize: llama.cpp's compute buffers
	// grow with it, and batches past a few thousand tokens gain nothing.
	MaxBatchSize = 8192
	// DefaultKVCacheBytes is the KV cache that Sequences 0 fills: as
	// many sequences of ContextSize tokens as fit, at least 1 and at
	// most DefaultMaxSequences. 256 MiB gives a tiny model 8 branches
	// and a 1B model (Llama 3.2 1B: 32 KiB per token) 2 of 4096 tokens.
	DefaultKVCacheBytes = 256 << 20
	// DefaultMaxSequences caps the default Sequences.
	DefaultMaxSequences = 8
	// SmallModelParams is the size below which Threads 0 means 1 thread.
	// Below it a token takes a few milliseconds or less on one core, and
	// a second thread costs more than it saves: ggml's threads meet at a
	// barrier for every operation of the graph, which is slow when a
	// thread waits for its core (another job running), and worse the
	// smaller the model (BenchmarkThreads). From it on, each operation
	// is long enough for a second core to pay when it is free.
	SmallModelParams = 8_000_000
	// maxThreadsCap is the most threads MaxThreads allows on any machine.
	maxThreadsCap = 256
)

// MaxThreads returns the most threads Options.Threads accepts: 4 per CPU
// of this machine, at most 256. Far more threads than cores only slow
// llama.cpp down, and tens of thousands make ggml abort.
func MaxThreads() int { return min(4*runtime.NumCPU(), maxThreadsCap) }

// DefaultThreads returns the threads Threads 0 gives a model of params
// parameters: 1 below SmallModelParams, else every CPU.
func DefaultThreads(params uint64) int {
	if params < SmallModelParams {
		return 1
	}
	return runtime.NumCPU()
}

func optionError(field string, v int, want string) error {
	return &decode.OptionError{Field: field, Value: strconv.Itoa(v), Want: want}
}

// validate checks the options that need no model.
func (o *Options) validate() error {
	switch {
	case o.ContextSize < 0 || o.ContextSize > MaxContextSize:
		return optionError("ContextSize", o.ContextSize, fmt.Sprintf("want 1 to %d tokens, or 0 for the model's training context (at most 4096)", MaxContextSize))
	case o.Sequences < 0 || o.Sequences > MaxSequences:
		return optionError("Sequences", o.Sequences, fmt.Sprintf("want 1 to %d (llama.cpp's limit), or 0 for as many as fit in %d MiB of KV cache", MaxSequences, DefaultKVCacheBytes>>20))
	case o.Threads < 0 || o.Threads > MaxThreads():
		return optionError("Threads", o.Threads, fmt.Sprintf("want 1 to %d (4 per CPU, %d CPUs), or 0 to pick by the model's size", MaxThreads(), runtime.NumCPU()))
	case o.BatchSize < 0 || o.BatchSize > MaxBatchSize:
		return optionError("BatchSize", o.BatchSize, fmt.Sprintf("want 1 to %d tokens, or 0 for 512", MaxBatchSize))
	case o.GPULayers < 0:
		return optionError("GPULayers", o.GPULayers, "want 0 or more")
	}
	return nil
}

// fill sets the defaults that depend on the model, and checks that the
// KV cache fits in memory.
func (o *Options) fill(mi *modelInfo) error {
	if o.ContextSize == 0 {
		o.ContextSize = int(min(mi.contextLen, 4096))
	}
	perSeq := int64(padContext(o.ContextSize)) * mi.kvBytesPerToken()
	if o.Sequences == 0 {
		o.Sequences = int(max(1, min(DefaultMaxSequences, DefaultKVCacheBytes/max(perSeq, 1))))
	}
	if o.Threads == 0 {
		o.Threads = DefaultThreads(mi.params)
	}
	if o.BatchSize == 0 {
		o.BatchSize = 512
	}
	if mem := physicalMemory(); mem > 0 && perSeq*int64(o.Sequences) > mem {
		return fmt.Errorf("the KV cache of %d sequences of %d tokens (Options.Sequences, Options.ContextSize) would take %d MiB, more than the %d MiB of memory of this machine",
			o.Sequences, padContext(o.ContextSize), perSeq*int64(o.Sequences)>>20, mem>>20)
	}
	return nil
}

// padContext is a sequence's context as llama.cpp allocates it: rounded
// up to a multiple of 256.
func padContext(n int) int { return (n + 255) / 256 * 256 }

// Model is a GGUF model loaded in llama.cpp. It implements
// decode.Backend. It is not safe for concurrent use (reins.New gives a
// handle that is); Close frees it.
type Model struct {
	path    string
	vocab   *vocab.Vocab
	model   *llama.Model
	ctx     *llama.Context
	batch   *llama.Batch
	log     *logSink
	opts    Options
	info    modelInfo
	nCtx    int
	nBatch  int // tokens llama.cpp accepts in one decode
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
// prefixed "ollama:" (see ResolveOllama).
//
// The file is checked in Go before llama.cpp sees it: a missing, empty,
// truncated or non-GGUF file, and any metadata or tensor that llama.cpp
// would trust and abort on, is an error naming the key or tensor and its
// byte offset (a *gguf.Error), not a crash. Only architectures whose
// metadata reins checks are loaded (llama). When llama.cpp itself
// refuses the file or the options, the error quotes what llama.cpp
// logged about it.
func Load(name string, opts Options) (*Model, error) {
	if err := opts.validate(); err != nil {
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
	mi, err := checkModelFile(f)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	spec, err := vocab.SpecFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	if err := opts.fill(mi); err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	m := &Model{path: path, opts: opts, info: *mi}
	if err := m.load(); err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
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
	m.cached = make([][]int, opts.Sequences)
	return m, nil
}

// load runs llama.cpp's loader and makes a context, with llama.cpp's log
// pointed at the model's logger and its complaints kept for the error.
func (m *Model) load() (err error) {
	logMu.Lock()
	defer logMu.Unlock()
	m.log = newSink(m.opts.Logger, installed())
	defer func() {
		caught := m.log.endCapture()
		if err != nil {
			err = explain(err, caught)
			m.closeLocked()
		}
	}()
	backendInit.Do(llama.BackendInit)
	// A progress callback of our own keeps llama.cpp from printing dots.
	m.model, err = llama.LoadModelFromFile(m.path, llama.ModelParams{NumGpuLayers: m.opts.GPULayers, UseMmap: true, Progress: func(float32) {}})
	if err != nil {
		return fmt.Errorf("llama.cpp refused the file: %w", err)
	}
	seqs, ctx := m.opts.Sequences, padContext(m.opts.ContextSize)
	// The context is asked for already rounded: llama.cpp caps a batch at
	// the context it was asked for (before rounding), and aborts on a
	// batch past that cap.
	params := llama.NewContextParams(ctx*seqs, m.opts.BatchSize, seqs, m.opts.Threads, ml.FlashAttentionDisabled, "")
	if m.ctx, err = llama.NewContextWithModel(m.model, params); err != nil {
		return fmt.Errorf("llama.cpp refused the options (ContextSize %d, Sequences %d, BatchSize %d, Threads %d): %w",
			m.opts.ContextSize, seqs, m.opts.BatchSize, m.opts.Threads, err)
	}
	m.nCtx = contextPerSequence(m.ctx)
	m.nBatch = batchLimit(m.ctx)
	if m.batch, err = llama.NewBatch(m.opts.BatchSize, seqs, 0); err != nil {
		return err
	}
	return nil
}

// explain adds to err the warnings and errors llama.cpp logged while it
// refused something.
func explain(err error, caught []string) error {
	if len(caught) == 0 {
		return err
	}
	return fmt.Errorf("%w; llama.cpp said: %s", err, strings.Join(caught, " | "))
}

// Close frees the model, its context and its batch. It is safe to call
// more than once.
func (m *Model) Close() error {
	logMu.Lock()
	defer logMu.Unlock()
	m.closeLocked()
	return nil
}

// closeLocked is Close, with logMu held.
func (m *Model) closeLocked() {
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
	m.log.close()
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

// Options returns the options the model was loaded with, defaults
// filled in.
func (m *Model) Options() Options { return m.opts }

// Params returns the model's parameter count (its tensors' elements).
func (m *Model) Params() uint64 { return m.info.params }

// KVBytesPerToken returns what one token takes in the KV cache.
func (m *Model) KVBytesPerToken() int64 { return m.info.kvBytesPerToken() }

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
	if err := checkTokenizeLen(text); err != nil {
		return nil, err
	}
	return m.model.Tokenize(text, addSpecial, false)
}

// MaxTokenizeBytes bounds a text given to llama.cpp's tokenizer, which
// takes its length as a 32-bit count and is given a buffer of 4 bytes a
// byte: 64 MiB of text is millions of tokens past any context.
const MaxTokenizeBytes = 64 << 20

func checkTokenizeLen(text string) error {
	if len(text) > MaxTokenizeBytes {
		return fmt.Errorf("tokenize: a text of %d bytes; llama.cpp's tokenizer is given at most %d (MaxTokenizeBytes)", len(text), MaxTokenizeBytes)
	}
	return nil
}
