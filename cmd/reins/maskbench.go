package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"

	"time"

	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/pyjson"
)

// maskbenchResult is one schema's outcome, one line of --out.
type maskbenchResult struct {
	File          string    `json:"file"`
	Status        string    `json:"status"` // pass, compile_error, validation_error, invalidation_error, timeout
	Error         string    `json:"error,omitempty"`
	TTFMMicros    float64   `json:"ttfm_us,omitempty"`
	TBMMicros     []float64 `json:"-"`
	Tokens        int       `json:"tokens"`
	Invalidations int       `json:"invalidations,omitempty"`
	ValidRefused  int       `json:"valid_refused,omitempty"`
}

// cmdMaskbench runs the MaskBench protocol (../shared/README.md) with
// reins' JSON Schema compiler.
func cmdMaskbench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("maskbench", flag.ContinueOnError)
	vocabPath := fs.String("vocab", "../shared/vocab/ggml-vocab-llama-bpe.gguf", "GGUF vocabulary (MaskBench uses Llama-3's)")
	engine := fs.String("engine", "reins", "engine: reins (llamacpp is not implemented yet)")
	out := fs.String("out", "", "write one JSON line per schema to this file")
	limit := fs.Duration("timeout", 30*time.Second, "per-schema time limit; a schema that exceeds it counts as a timeout")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins maskbench [--vocab F] [--engine reins] [--out results.jsonl] PATHS...")
		fs.PrintDefaults()
	}
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usagef("maskbench takes MaskBench files or folders")
	}
	if *engine != "reins" {
		return usagef("--engine %s: only reins is implemented so far", *engine)
	}
	files, err := maskbenchFiles(paths)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(1)
	quietLlama(false)
	tok, err := llama.LoadTokenizer(*vocabPath)
	if err != nil {
		return err
	}
	defer tok.Close()
	v := tok.Vocab()
	trie := decode.NewTokenTrie(v)
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
	var results []maskbenchResult
	start := time.Now()
	for i, f := range files {
		fmt.Fprintf(stderr, "\r%d/%d schemas", i+1, len(files))
		r := maskbenchOne(f, v, trie, tok, *limit)
		results = append(results, r)
		if jsonl != nil {
			if err := jsonl.Encode(r); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(stderr)
	printMaskbench(stdout, results, time.Since(start))
	return nil
}

// maskbenchOne runs one schema file: compile (TTFM includes the first
// mask), then for every test instance serialise it as Python does,
// tokenize it, and mask and advance token by token.
func maskbenchOne(path string, v *decode.Vocab, trie *decode.TokenTrie, tok *llama.Tokenizer, limit time.Duration) maskbenchResult {
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
	g, err := jsonschema.Compile(mb.Schema, jsonschema.Options{})
	var a *decode.Automaton
	if err == nil {
		var p *grammar.Prog
		if p, err = grammar.Compile(g); err == nil {
			a, err = decode.NewAutomaton(p, v, trie)
		}
	}
	if err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return r
	}
	mask := make([]uint32, decode.MaskWords(v.Len()))
	m := a.NewMatcher()
	m.FillMask(mask)
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
		m.Reset()
		accepted := true
		for _, id := range append(ids, v.EOS()) {
			if time.Now().After(deadline) {
				r.Status = "timeout"
				return r
			}
			t := time.Now()
			m.FillMask(mask)
			r.TBMMicros = append(r.TBMMicros, float64(time.Since(t).Nanoseconds())/1000)
			r.Tokens++
			if mask[id/32]&(1<<(id%32)) == 0 {
				accepted = false
				break
			}
			if err := m.Advance(id); err != nil {
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

func printMaskbench(w io.Writer, rs []maskbenchResult, took time.Duration) {
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
	row("TBM", tbm)
	row("TTFM", ttfm)
	n := len(rs)
	pct := func(k int) string { return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(max(n, 1))) }
	fmt.Fprintf(w, "\ntokens %d, schemas %d, passing %s, compile errors %s, validation errors %s, invalidation errors %s, timeouts %s; %v\n",
		len(tbm), n, pct(count["pass"]), pct(count["compile_error"]), pct(count["validation_error"]), pct(count["invalidation_error"]), pct(count["timeout"]), took.Round(time.Second))

}
