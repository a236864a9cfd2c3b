package main

import (
	"encoding/json"
	"errors"
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
	"github.com/reins-go/reins/grammar/jsonschema"
	"github.com/reins-go/reins/internal/fileread"
	"github.com/reins-go/reins/internal/pyjson"
	"github.com/reins-go/reins/vocab"
)

// maskbenchResult is one schema's outcome, one line of --out.
//
// Timing follows MaskBench's runner: TTFM is the compile alone, timed
// around the engine's compile call where it runs (the compiler's
// goroutine, so that a timeout can stop waiting: the hand-over to it and
// back, 3 to 40 µs, is not the engine's); a TBM
// sample is one token's mask and commit together (the first one of the
// first test includes the first mask's work, also reported alone as
// FirstMask). Two verdicts: MaskBench's own (a valid instance must have
// every token committed, an invalid one must have one refused) in
// Status, and reins' stricter one in StrictStatus, which also wants the
// end allowed after a valid instance.
type maskbenchResult struct {
	Engine        string    `json:"engine"`
	File          string    `json:"file"`
	Status        string    `json:"status"`        // MaskBench's rule: pass, compile_error, validation_error, invalidation_error, timeout
	StrictStatus  string    `json:"strict_status"` // reins' rule: the same, and the end must be allowed after a valid instance
	Error         string    `json:"error,omitempty"`
	TTFMMicros    float64   `json:"ttfm_us,omitempty"`
	FirstMask     float64   `json:"first_mask_us,omitempty"`
	TBMMicros     []float64 `json:"-"`
	MaxTBMMicros  float64   `json:"tbm_max_us,omitempty"` // the slowest mask, to find pathological schemas
	Tokens        int       `json:"tokens"`
	Invalidations int       `json:"invalidations,omitempty"`
	ValidRefused  int       `json:"valid_refused,omitempty"`
	EndRefused    int       `json:"end_refused,omitempty"` // valid instances whose end was refused
}

// cmdMaskbench runs the MaskBench protocol (../shared/README.md) with
// reins' JSON Schema compiler.
// maxBenchFile bounds a MaskBench file: a schema and its test instances.
const maxBenchFile = 64 << 20

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
	if *limit <= 0 {
		return usagef("--timeout %v: want a positive time", *limit)
	}
	if *gogc < 0 {
		return usagef("--gogc %d: want a percent of 0 or more", *gogc)
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
		c := newCompiler(eng)
		for i, f := range files {
			fmt.Fprintf(stderr, "\r%s: %d/%d schemas", engine, i+1, len(files))
			r := maskbenchOne(f, c, v, tok, *limit)
			r.Engine = engine
			results = append(results, r)
			if jsonl != nil {
				if err := jsonl.Encode(r); err != nil {
					return err
				}
			}
		}
		c.stop()
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
	_, p, err := jsonschema.CompileProg(schema, jsonschema.Options{})
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
func (s llamaSession) advance(tok int) error  { return s.g.Accept(tok) }
func (s llamaSession) close()                 { s.g.Close() }

// maskbenchOne runs one schema file with MaskBench's protocol: compile
// (TTFM), then for every test instance serialised as Python does and
// tokenized, mask and commit token by token (TBM), and after a fully
// committed valid instance, whether the end is allowed (untimed).
func maskbenchOne(path string, c *compiler, v *vocab.Vocab, tok *llama.Tokenizer, limit time.Duration) maskbenchResult {
	r := maskbenchResult{File: filepath.Base(path)}
	fail := func(status, msg string) maskbenchResult {
		r.Status, r.StrictStatus, r.Error = status, status, msg
		return r
	}
	raw, err := fileread.Read(path, maxBenchFile)
	if err != nil {
		return fail("compile_error", err.Error())
	}
	var mb struct {
		Schema json.RawMessage `json:"schema"`
		Tests  []struct {
			Valid bool            `json:"valid"`
			Data  json.RawMessage `json:"data"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(raw, &mb); err != nil {
		return fail("compile_error", err.Error())
	}
	deadline := time.Now().Add(limit)
	m, took, err := c.compileWithin(mb.Schema, limit)
	if err == errTimeout {
		return fail("timeout", "compiling took longer than --timeout")
	}
	if err != nil {
		return fail("compile_error", err.Error())
	}
	r.TTFMMicros = float64(took.Nanoseconds()) / 1000
	defer m.close()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	first := true
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
			return fail("compile_error", err.Error())
		}
		committed := true
		for _, id := range ids {
			if time.Now().After(deadline) {
				return fail("timeout", "masking took longer than --timeout")
			}
			t := time.Now()
			m.fillMask(mask)
			ok := mask[id/32]&(1<<(id%32)) != 0
			if ok {
				if err := m.advance(id); err != nil {
					return fail("compile_error", "internal: mask and commit disagree: "+err.Error())
				}
			}
			us := float64(time.Since(t).Nanoseconds()) / 1000
			if first {
				r.FirstMask, first = us, false
			}
			r.TBMMicros = append(r.TBMMicros, us)
			r.MaxTBMMicros = max(r.MaxTBMMicros, us)
			r.Tokens++
			if !ok {
				committed = false
				break
			}
		}
		switch {
		case committed && !test.Valid:
			r.Invalidations++
		case !committed && test.Valid:
			r.ValidRefused++
		case committed && test.Valid:
			m.fillMask(mask)
			if eos := v.EOS(); eos < 0 || mask[eos/32]&(1<<(eos%32)) == 0 {
				r.EndRefused++
			}
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
	r.StrictStatus = r.Status
	if r.Status == "pass" && r.EndRefused > 0 {
		r.StrictStatus = "validation_error"
	}
	return r
}

// errTimeout is a compile that --timeout stopped waiting for.
var errTimeout = errors.New("timeout")

// compiler runs a run's compiles on one goroutine, whose stack usually
// stays grown from one schema to the next, as a server's goroutines'
// do (the runtime halves an idle stack at a collection only when it
// uses under a quarter of it): on a new goroutine, each compile would
// spend tens of microseconds growing its stack, about a tenth of a
// median schema's TTFM.
type compiler struct {
	eng  maskEngine
	jobs chan compileJob
}

type compileJob struct {
	schema []byte
	done   chan compileResult
}

type compileResult struct {
	m    maskSession
	took time.Duration // the compile call's time
	err  error
}

func newCompiler(eng maskEngine) *compiler {
	c := &compiler{eng: eng}
	c.start()
	return c
}

// start gives the compiler a new goroutine.
func (c *compiler) start() {
	jobs := make(chan compileJob)
	go func() {
		for j := range jobs {
			t0 := time.Now()
			m, err := c.eng.compile(j.schema)
			j.done <- compileResult{m, time.Since(t0), err}
		}
	}()
	c.jobs = jobs
}

// stop ends the compiler's goroutine once it is done.
func (c *compiler) stop() { close(c.jobs) }

// compileWithin compiles schema and returns the compile call's time,
// giving up after limit: the compile then goes on in the background,
// where it can only finish or fail, on a goroutine the compiler leaves
// to it, and the benchmark moves on.
func (c *compiler) compileWithin(schema []byte, limit time.Duration) (maskSession, time.Duration, error) {
	done := make(chan compileResult, 1)
	c.jobs <- compileJob{schema, done}
	select {
	case r := <-done:
		return r.m, r.took, r.err
	case <-time.After(limit):
		c.stop()
		c.start()
		go func() { // free the session if the compile ever ends
			if r := <-done; r.err == nil {
				r.m.close()
			}
		}()
		return nil, 0, errTimeout
	}
}

// micros formats a time in µs for the report: with two decimals below
// 10 µs, where the TBM medians sit and a tenth is a large step, else one.
func micros(us float64) string {
	if us < 10 {
		return fmt.Sprintf("%.2f", us)
	}
	return fmt.Sprintf("%.1f", us)
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
	var tbm, ttfm, firsts []float64
	count, strict := map[string]int{}, map[string]int{}
	for _, r := range rs {
		count[r.Status]++
		strict[r.StrictStatus]++
		tbm = append(tbm, r.TBMMicros...)
		if r.TTFMMicros > 0 {
			ttfm = append(ttfm, r.TTFMMicros)
		}
		if r.FirstMask > 0 {
			firsts = append(firsts, r.FirstMask)
		}
	}
	row := func(name string, xs []float64) {
		if len(xs) == 0 {
			fmt.Fprintf(w, "%-10s (none)\n", name)
			return
		}
		slices.Sort(xs)
		var sum float64
		for _, x := range xs {
			sum += x
		}
		q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
		fmt.Fprintf(w, "%-10s %9s %8s %8s %8s %8s %8s %9s %9s %10s\n", name, micros(sum/float64(len(xs))), micros(q(0.25)), micros(q(0.5)), micros(q(0.75)), micros(q(0.9)), micros(q(0.95)), micros(q(0.99)), micros(q(0.999)), micros(xs[len(xs)-1]))
	}
	fmt.Fprintf(w, "%-10s %9s %8s %8s %8s %8s %8s %9s %9s %10s   (µs)\n", "", "avg", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "max")
	row("TBM", tbm) // sorts tbm
	row("TTFM", ttfm)
	row("first mask", firsts)
	p50 := 0.0
	if len(tbm) > 0 {
		p50 = tbm[len(tbm)/2]
	}
	n := len(rs)
	pct := func(k int) string { return fmt.Sprintf("%d (%.1f%%)", k, 100*float64(k)/float64(max(n, 1))) }
	fmt.Fprintf(w, "\nTBM: mask and commit of one token; TTFM: compile alone; first mask: the first TBM of each schema, which fills the first state's cache.\n")
	fmt.Fprintf(w, "tokens %d, schemas %d, timeouts %s; %v, GOGC %d\n", len(tbm), n, pct(count["timeout"]), took.Round(time.Second), gcPercent())
	fmt.Fprintf(w, "MaskBench's rule:                     passing %s, compile errors %s, validation errors %s, invalidation errors %s\n",
		pct(count["pass"]), pct(count["compile_error"]), pct(count["validation_error"]), pct(count["invalidation_error"]))
	fmt.Fprintf(w, "reins' rule (end allowed when valid): passing %s, compile errors %s, validation errors %s, invalidation errors %s\n",
		pct(strict["pass"]), pct(strict["compile_error"]), pct(strict["validation_error"]), pct(strict["invalidation_error"]))
	return p50
}
