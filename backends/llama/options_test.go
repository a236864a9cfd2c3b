package llama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
	"github.com/reins-go/reins/vocab"
)

// TestOptionsOutOfRange checks that every size a user gives is bounded
// before llama.cpp sees it, with an error naming the field and the
// range.
func TestOptionsOutOfRange(t *testing.T) {
	path := fixturePath(t)
	tests := []struct {
		opts  Options
		field string
		want  string
	}{
		{Options{Threads: 100000}, "Threads", fmt.Sprintf("Threads 100000: want 1 to %d (4 per CPU", MaxThreads())},
		{Options{Threads: -1}, "Threads", "Threads -1: want 1 to"},
		{Options{ContextSize: -5}, "ContextSize", "ContextSize -5: want 1 to 1048576 tokens"},
		{Options{ContextSize: MaxContextSize + 1}, "ContextSize", "ContextSize 1048577: want 1 to 1048576"},
		{Options{Sequences: 100000}, "Sequences", "Sequences 100000: want 1 to 256 (llama.cpp's limit)"},
		{Options{BatchSize: 1 << 30}, "BatchSize", "BatchSize 1073741824: want 1 to 8192"},
		{Options{GPULayers: -3}, "GPULayers", "GPULayers -3: want 0 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Load(path, tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var oe *decode.OptionError
			require.True(t, errors.As(err, &oe))
			assert.Equal(t, tt.field, oe.Field)
		})
	}
	// Within range but past the machine's memory.
	_, err := Load(path, Options{ContextSize: MaxContextSize, Sequences: MaxSequences})
	assert.ErrorContains(t, err, "the KV cache of 256 sequences of 1048576 tokens (Options.Sequences, Options.ContextSize) would take")
}

// TestTinyContextAndOddBatches loads contexts smaller than llama.cpp's
// rounding and batches larger than them: llama.cpp aborts on a batch
// past the context it was asked for, which ContextSize 1 used to reach.
func TestTinyContextAndOddBatches(t *testing.T) {
	fx := fixturePath(t)
	for _, o := range []Options{{ContextSize: 1}, {ContextSize: 100, BatchSize: 512, Sequences: 3}, {ContextSize: 300, BatchSize: 7, Sequences: 2}} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			m := load(t, fx, o)
			assert.Equal(t, padContext(o.ContextSize), m.ContextSize())
			prompt := strings.Repeat("the cat sat on the mat. ", 20)[:m.ContextSize()-40]
			c, err := decode.CompleteN(context.Background(), m, prompt, min(2, m.MaxSequences()), decode.Options{MaxTokens: 8, Sampling: decode.SamplingOptions{Temperature: 1}})
			require.NoError(t, err)
			require.NotEmpty(t, c)
			_, err = decode.Score(context.Background(), m, prompt[:m.ContextSize()-50], decode.ScoreOptions{})
			require.NoError(t, err)
		})
	}
}

// TestDefaults checks the defaults that depend on the model: threads
// by its size, sequences by the KV cache budget.
func TestDefaults(t *testing.T) {
	m := load(t, fixturePath(t), Options{})
	o := m.Options()
	assert.Equal(t, 512, o.ContextSize, "the fixture's training context")
	assert.Equal(t, 1, o.Threads, "a tiny model runs on one thread")
	// 1 layer × 2 × 4 heads × 68 × 2 bytes = 1088 bytes a token: 8 of 512.
	assert.Equal(t, int64(1088), m.KVBytesPerToken())
	assert.Equal(t, DefaultMaxSequences, o.Sequences)
	assert.Equal(t, 512, o.BatchSize)

	assert.Equal(t, 1, DefaultThreads(SmallModelParams-1))
	assert.Equal(t, DefaultThreads(SmallModelParams), DefaultThreads(1<<40))

	stories := load(t, shared.Path(t, "models/stories260K.gguf"), Options{})
	assert.Equal(t, 2048, stories.Options().ContextSize)
	assert.Equal(t, 1, stories.Options().Threads)
	assert.Equal(t, DefaultMaxSequences, stories.Options().Sequences)
	// A model whose cache fills the budget with fewer sequences: the
	// budget over one sequence's cache.
	mi := &modelInfo{contextLen: 4096, layers: 16, headsKV: 8, headDim: 64}
	opts := Options{}
	require.NoError(t, opts.fill(mi))
	assert.Equal(t, 2, opts.Sequences, "Llama 3.2 1B: 32 KiB a token, 2 of 4096 in 256 MiB")
	mi.layers = 80
	opts = Options{ContextSize: 8192}
	require.NoError(t, opts.fill(mi))
	assert.Equal(t, 1, opts.Sequences, "never fewer than one")
}

// logRecorder is a slog.Handler that keeps the messages it gets.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	src := ""
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "source" {
			src = a.Value.String()
		}
		return true
	})
	r.msgs = append(r.msgs, src+": "+rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *logRecorder) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs[n:]...)
}

// TestLoggerRouting checks where llama.cpp's process-wide log goes with
// several models loaded with different loggers (the rules are in
// log.go and on Options.Logger).
func TestLoggerRouting(t *testing.T) {
	path := fixturePath(t)
	ra, rb := &logRecorder{}, &logRecorder{}
	// A message llama.cpp logs after loading: its grammar parser's error.
	poke := func() {
		g, err := NewReferenceVocab(fixtureVocab(t)).Grammar("root ::= (")
		if err == nil {
			g.Close()
		}
	}
	a, err := Load(path, Options{Logger: slog.New(ra)})
	require.NoError(t, err)
	require.NotZero(t, ra.count(), "A's load is logged to A's logger")
	assert.Contains(t, strings.Join(ra.since(0), "\n"), "llama.cpp: INFO llama_model_loader: loaded meta data")

	na := ra.count()
	b, err := Load(path, Options{Logger: slog.New(rb)})
	require.NoError(t, err)
	assert.Equal(t, na, ra.count(), "B's load is not logged to A's logger")
	require.NotZero(t, rb.count())

	tok, err := LoadTokenizer(shared.Path(t, "vocab/ggml-vocab-gpt-2.gguf"))
	require.NoError(t, err)
	tok.Close()
	assert.Equal(t, na, ra.count(), "a tokenizer's load goes to no logger")

	nb := rb.count()
	poke()
	assert.Equal(t, na, ra.count())
	require.Greater(t, rb.count(), nb, "after B's load, llama.cpp's messages go to B")
	assert.Contains(t, strings.Join(rb.since(nb), "\n"), "ERROR")

	require.NoError(t, b.Close())
	nb = rb.count()
	poke()
	assert.Equal(t, nb, rb.count(), "B is closed")
	assert.Greater(t, ra.count(), na, "back to A, the most recent model still open")

	require.NoError(t, a.Close())
	na = ra.count()
	poke()
	assert.Equal(t, na, ra.count())
	assert.Equal(t, nb, rb.count(), "no model open: discarded")

	// A nil logger: the load succeeds and nothing is logged anywhere.
	c := load(t, path, Options{})
	poke()
	c.Close()
	assert.Equal(t, na, ra.count())
	assert.Equal(t, nb, rb.count())
}

// TestClosedModelsDoNotShadowOpenOnes closes models out of order: the
// log falls back past closed ones.
func TestClosedModelsDoNotShadowOpenOnes(t *testing.T) {
	path := fixturePath(t)
	rs := []*logRecorder{{}, {}, {}}
	var ms []*Model
	for _, r := range rs {
		m, err := Load(path, Options{Logger: slog.New(r)})
		require.NoError(t, err)
		ms = append(ms, m)
	}
	ms[1].Close() // not the installed one
	ms[2].Close() // the installed one: falls back past 1 to 0
	n := rs[0].count()
	_, _ = NewReferenceVocab(fixtureVocab(t)).Grammar("root ::= (")
	assert.Greater(t, rs[0].count(), n)
	ms[0].Close()
}

// TestLoadErrorsQuoteLlamaCpp checks that when llama.cpp refuses a file
// the Go checks let through, the error says what llama.cpp said.
func TestLoadErrorsQuoteLlamaCpp(t *testing.T) {
	// A vocabulary-only load reads no architecture keys, so reins does
	// not check the architecture; llama.cpp refuses one it does not know.
	m := readModel(t, shared.Path(t, "vocab/ggml-vocab-gpt-2.gguf"))
	p := m.set("general.architecture", "no-such-arch").write(t, filepath.Join(t.TempDir(), "v.gguf"))
	_, err := LoadTokenizer(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "llama.cpp refused it")
	assert.Contains(t, err.Error(), "llama.cpp said: ")
	assert.Contains(t, err.Error(), "unknown model architecture: 'no-such-arch'")
}

// fixtureVocab returns the fixture's vocabulary, built in Go: loading
// a model would move llama.cpp's log.
func fixtureVocab(*testing.T) *vocab.Vocab { return fixture.New().Vocab() }

// TestLoggerLines checks how llama.cpp's pieces of messages become
// records: one per line, a continuation joining its line, levels kept.
func TestLoggerLines(t *testing.T) {
	var buf bytes.Buffer
	s := &logSink{logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), capture: true}
	s.write(ggmlLogInfo, "a first ")
	s.write(ggmlLogCont, "line\nand a second\n")
	s.write(ggmlLogWarn, "careful\n")
	s.write(ggmlLogError, "broken: ")
	s.write(ggmlLogCont, ".")
	s.write(ggmlLogCont, "\n")
	s.write(ggmlLogDebug, "detail\n\n")
	out := buf.String()
	assert.Contains(t, out, `level=INFO msg="a first line" source=llama.cpp`)
	assert.Contains(t, out, `level=INFO msg="and a second"`)
	assert.Contains(t, out, `level=WARN msg=careful`)
	assert.Contains(t, out, `level=ERROR msg="broken: ."`)
	assert.Contains(t, out, `level=DEBUG msg=detail`)
	assert.Equal(t, []string{"broken: ."}, s.endCapture(), "errors, when there are some")
	assert.Equal(t, 5, strings.Count(out, "\n"))
}

// TestLogFallbackChainStaysShort loads and closes models in an order
// where each Load's fallback is a model closed later: the chain of
// fallbacks keeps only open models and those closed since the last load.
// (Models other tests left open may sit further down the chain: only
// this test's sinks are counted.)
func TestLogFallbackChainStaysShort(t *testing.T) {
	path := fixturePath(t)
	prev, err := Load(path, Options{ContextSize: 64, Sequences: 1})
	require.NoError(t, err)
	mine := map[*logSink]bool{prev.log: true}
	for range 20 {
		next, err := Load(path, Options{ContextSize: 64, Sequences: 1})
		require.NoError(t, err)
		mine[next.log] = true
		prev.Close()
		prev = next
	}
	n := 0
	for s := prev.log; s != nil; s = s.prev {
		if mine[s] {
			n++
		}
	}
	assert.LessOrEqual(t, n, 2, "this test's sinks in the chain: the open one and the one closed since the last load")
	prev.Close()
}

func TestTokenizeBounded(t *testing.T) {
	m := load(t, fixturePath(t), Options{ContextSize: 64, Sequences: 1})
	_, err := m.Tokenize(strings.Repeat("a", MaxTokenizeBytes+1), false)
	assert.ErrorContains(t, err, "a text of 67108865 bytes; llama.cpp's tokenizer is given at most 67108864")
}
