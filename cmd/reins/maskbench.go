package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"

	"time"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/pyjson"
	"github.com/reins-go/reins/vocab"
)

// maskbenchResult is one schema's outcome, one line of --out.
type maskbenchResult struct {
	Engine        string    `json:"engine"`
	File          string    `json:"file"`
	Status        string    `json:"status"` // pass, compile_error, validation_error, invalidation_error, timeout
	Error         string    `json:"error,omitempty"`
	TTFMMicros    float64   `json:"ttfm_us,omitempty"`
	TBMMicros     []float64 `json:"-"`
	MaxTBMMicros  float64   `json:"tbm_max_us,omitempty"` // the slowest mask, to find pathological schemas
	Tokens        int       `json:"tokens"`
	Invalidations int       `json:"invalidations,omitempty"`
	ValidRefused  int       `json:"valid_refused,omitempty"`
}

// cmdMaskbench runs the MaskBench protocol (../shared/README.md) with
// reins' JSON Schema compiler.
func cmdMaskbench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("maskbench", flag.ContinueOnError)
	vocabPath := fs.String("vocab", "../shared/vocab/ggml-vocab-llama-bpe.gguf", "GGUF vocabulary (MaskBench uses Llama-3's)")
	engineList := fs.String("engine", "reins", "engine: reins, llamacpp (llama.cpp's json_schema_to_grammar and grammar engine), or both comma-separated to compare them in one run")
	out := fs.String("out", "", "write one JSON line per schema to this file")
	limit := fs.Duration("timeout", 30*time.Second, "per-schema time limit; a schema that exceeds it counts as a timeout")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	gogc := fs.Int("gogc", defaultGOGC(), "the Go garbage collector's target percent for the run (GOGC; 0 keeps the runtime's). The default, 200 unless GOGC is set, trades memory for time as a batch job would: a large schema allocates tens of MB, and at Go's 100 the runtime hands that memory back to the system between schemas and takes page faults to get it again, which shows in the tail of TTFM")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins maskbench [--vocab F] [--engine reins|llamacpp|reins,llamacpp] [--out results.jsonl] [--gogc N] PATHS...")
		fs.PrintDefaults()
	}
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usagef("maskbench takes MaskBench files or folders")
	}
	engines := strings.Split(*engineList, ",")
	for _, e := range engines {
		if e != "reins" && e != "llamacpp" {
			return usagef("--engine %s: want reins, llamacpp or both", e)
		}
	}
	files, err := maskbenchFiles(paths)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(1)
	if *gogc > 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(*gogc))
	}
	quietLlama(false)
	tok, err := llama.LoadTokenizer(*vocabPath)
	if err != nil {
		return err
	}
	defer tok.Close()
	v := tok.Vocab()
	trie := automaton.NewTrie(v)
	var jsonl *json.Encoder
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		jsonl = json.NewEncoder(f)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var tbmP50 []float64
	for _, engine := range engines {
		var eng maskEngine = reinsEngine{v: v, trie: trie}
		if engine == "llamacpp" {
			eng = llamaEngine{llama.NewReferenceVocab(v)}
		}
		var results []maskbenchResult
		start := time.Now()
		for i, f := range files {
			fmt.Fprintf(stderr, "\r%s: %d/%d schemas", engine, i+1, len(files))
			r := maskbenchOne(f, eng, v, tok, *limit)
			r.Engine = engine
			results = append(results, r)
			if jsonl != nil {
				if err := jsonl.Encode(r); err != nil {
					return err
				}
			}
		}
		fmt.Fprintln(stderr)
		if len(engines) > 1 {
			fmt.Fprintf(stdout, "engine %s\n", engine)
		}
		tbmP50 = append(tbmP50, printMaskbench(stdout, results, time.Since(start)))
	}
	if len(engines) == 2 && tbmP50[0] > 0 {
		fmt.Fprintf(stdout, "\nTBM p50: %s / %s = %.0f×\n", engines[1], engines[0], tbmP50[1]/tbmP50[0])
	}
	return nil
}

// maskEngine compiles a schema into a session that masks and advances,
// so that engines run the same protocol on the same tokens.
type maskEngine interface {
	compile(schema []byte) (maskSession, error)
}

// maskSession is one compiled schema's state.
type maskSession interface {
	fillMask(mask []uint32)
	advance(tok int) error
	reset() error
	close()
}

// reinsEngine is reins' JSON Schema compiler and automaton.
type reinsEngine struct {
	v    *vocab.Vocab
	trie *automaton.Trie
}

type reinsSession struct{ m *automaton.Matcher }

func (e reinsEngine) compile(schema []byte) (maskSession, error) {
	g, err := jsonschema.Compile(schema, jsonschema.Options{})
	if err != nil {
		return nil, err
	}
	p, err := grammar.Compile(g)
	if err != nil {
		return nil, err
	}
	a, err := automaton.New(p, e.v, e.trie)
	if err != nil {
		return nil, err
	}
	return reinsSession{a.NewMatcher()}, nil
}

func (s reinsSession) fillMask(mask []uint32) { s.m.FillMask(mask) }
func (s reinsSession) advance(tok int) error  { return s.m.Advance(tok) }
func (s reinsSession) reset() error           { s.m.Reset(); return nil }
func (s reinsSession) close()                 {}

// llamaEngine is llama.cpp's json_schema_to_grammar and grammar engine.
type llamaEngine struct{ r *llama.ReferenceVocab }

// llamaSession is one schema in llama.cpp's engine.
type llamaSession struct{ g *llama.ReferenceGrammar }

func (e llamaEngine) compile(schema []byte) (maskSession, error) {
	src, err := llama.SchemaToGrammar(schema)
	if err != nil {
		return nil, err
	}
	g, err := e.r.Grammar(src)
	if err != nil {
		return nil, err
	}
	return llamaSession{g}, nil
}

func (s llamaSession) reset() error           { return s.g.Reset() }
func (s llamaSession) fillMask(mask []uint32) { s.g.FillMask(mask) }
func (s llamaSession) advance(tok int) error  { s.g.Accept(tok); return nil }
func (s llamaSession) close()                 { s.g.Close() }

// maskbenchOne runs one schema file: compile (TTFM includes the first
// mask), then for every test instance serialise it as Python does,
// tokenize it, and mask and advance token by token.
func maskbenchOne(path string, eng maskEngine, v *vocab.Vocab, tok *llama.Tokenizer, limit time.Duration) maskbenchResult {
	r := maskbenchResult{File: filepath.Base(path)}
	raw, err := os.ReadFile(path)
	if err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return r
	}
	var mb struct {
		Schema json.RawMessage `json:"schema"`
		Tests  []struct {
			Valid bool            `json:"valid"`
			Data  json.RawMessage `json:"data"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(raw, &mb); err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return r
	}
	deadline := time.Now().Add(limit)
	t0 := time.Now()
	m, err := eng.compile(mb.Schema)
	if err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return r
	}
	defer m.close()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	m.fillMask(mask)
	r.TTFMMicros = float64(time.Since(t0).Nanoseconds()) / 1000
	for _, test := range mb.Tests {
		text, err := pyjson.Dumps(test.Data)
		if err != nil {
			continue
		}
		ids, err := tok.Tokenize(text, false)
		if err != nil {
			continue
		}
		if err := m.reset(); err != nil {
			r.Status, r.Error = "compile_error", err.Error()
			return r
		}
		accepted := true
		for _, id := range append(ids, v.EOS()) {
			if time.Now().After(deadline) {
				r.Status = "timeout"
				return r
			}
			t := time.Now()
			m.fillMask(mask)
			us := float64(time.Since(t).Nanoseconds()) / 1000
			r.TBMMicros = append(r.TBMMicros, us)
			r.MaxTBMMicros = max(r.MaxTBMMicros, us)
			r.Tokens++
			if mask[id/32]&(1<<(id%32)) == 0 {
				accepted = false
				break
			}
			if v.IsEOG(id) {
				break // the end was allowed: nothing follows
			}
			if err := m.advance(id); err != nil {
				r.Status, r.Error = "compile_error", "internal: mask and Advance disagree: "+err.Error()
				return r
			}
		}
		switch {
		case accepted && !test.Valid:
			r.Invalidations++
		case !accepted && test.Valid:
			r.ValidRefused++
		}
	}
	switch {
	case r.Invalidations > 0:
		r.Status = "invalidation_error"
	case r.ValidRefused > 0:
		r.Status = "validation_error"
	default:
		r.Status = "pass"
	}
	return r
}

// defaultGOGC is --gogc's default: 200, or 0 (the runtime's setting)
// when the environment sets GOGC.
func defaultGOGC() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	return 200
}

// gcPercent is the garbage collector's current target percent (-1: off).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// printMaskbench prints the published table and returns the TBM median.
func printMaskbench(w io.Writer, rs []maskbenchResult, took time.Duration) float64 {
	var tbm, ttfm []float64
	count := map[string]int{}
	for _, r := range rs {
		count[r.Status]++
		tbm = append(tbm, r.TBMMicros...)
		if r.TTFMMicros > 0 {
			ttfm = append(ttfm, r.TTFMMicros)
		}
	}
	row := func(name string, xs []float64) {
		if len(xs) == 0 {
			fmt.Fprintf(w, "%-5s (none)\n", name)
			return
		}
		slices.Sort(xs)
		var sum float64
		for _, x := range xs {
			sum += x
		}
		q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
		fmt.Fprintf(w, "%-5s %9.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f %9.1f %10.1f\n", name, sum/float64(len(xs)), q(0.25), q(0.5), q(0.75), q(0.9), q(0.95), q(0.99), q(0.999), xs[len(xs)-1])
	}
	fmt.Fprintf(w, "%-5s %9s %8s %8s %8s %8s %8s %9s %9s %10s   (µs)\n", "", "avg", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "max")
	row("TBM", tbm) // sorts tbm
	row("TTFM", ttfm)
	p50 := 0.0
	if len(tbm) > 0 {
		p50 = tbm[len(tbm)/2]
	}
	n := len(rs)
	pct := func(k int) string { return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(max(n, 1))) }
	fmt.Fprintf(w, "\ntokens %d, schemas %d, passing %s, compile errors %s, validation errors %s, invalidation errors %s, timeouts %s; %v, GOGC %d\n",
		len(tbm), n, pct(count["pass"]), pct(count["compile_error"]), pct(count["validation_error"]), pct(count["invalidation_error"]), pct(count["timeout"]), took.Round(time.Second), gcPercent())
	return p50
}
