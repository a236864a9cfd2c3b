package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"time"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/gbnf"
	"github.com/reins-go/reins/internal/fileread"
	"github.com/reins-go/reins/internal/pyjson"
)

// cmdBenchGrammar measures per-token mask time of a GBNF grammar along
// the valid instances of MaskBench files, for reins and, on the same
// tokens in the same process, llama.cpp's grammar engine.
func cmdBenchGrammar(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-grammar", flag.ContinueOnError)
	grammarFile := fs.String("grammar", "../shared/gbnf/json.gbnf", "GBNF grammar to walk")
	vocabPath := fs.String("vocab", "../shared/vocab/ggml-vocab-llama-bpe.gguf", "GGUF vocabulary (MaskBench uses Llama-3's)")
	llamaTokens := fs.Int("llamacpp-tokens", 3000, "how many tokens to also run through llama.cpp (it is slow); 0 for none")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins bench-grammar [flags] PATHS... (MaskBench JSON files or folders)")
		fs.PrintDefaults()
	}
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usagef("bench-grammar takes MaskBench files or folders")
	}
	if *grammarFile == "" {
		return usagef("--grammar is empty: give a GBNF file")
	}
	files, err := maskbenchFiles(paths)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(1)
	quietLlama(false)
	src, err := fileread.Read(*grammarFile, reins.MaxSourceBytes)
	if err != nil {
		return err
	}
	tok, err := llama.LoadTokenizer(*vocabPath)
	if err != nil {
		return err
	}
	defer tok.Close()
	v := tok.Vocab()

	t0 := time.Now()
	trie := automaton.NewTrie(v)
	trieTime := time.Since(t0)
	t0 = time.Now()
	g, err := gbnf.Parse(*grammarFile, string(src))
	if err != nil {
		return err
	}
	prog, err := grammar.Compile(g)
	if err != nil {
		return err
	}
	a, err := automaton.New(prog, v, trie)
	if err != nil {
		return err
	}
	compileTime := time.Since(t0)

	var reinsNS, llamaNS []float64
	var instances, rejected, tokens, maxState, maxStateToks int
	var maxStateAt string
	var ref *llama.ReferenceVocab // llama.cpp's view of the vocabulary
	if *llamaTokens > 0 {
		ref = llama.NewReferenceVocab(v)
	}
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	for fi, f := range files {
		fmt.Fprintf(stderr, "\r%d/%d files, %d instances, %d tokens", fi+1, len(files), instances, tokens)
		raw, err := fileread.Read(f, maxBenchFile)
		if err != nil {
			return err
		}
		var mb struct {
			Tests []struct {
				Valid bool            `json:"valid"`
				Data  json.RawMessage `json:"data"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(raw, &mb); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, test := range mb.Tests {
			if !test.Valid {
				continue
			}
			text, err := pyjson.Dumps(test.Data)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			toks, err := tok.Tokenize(text, false)
			if err != nil {
				return err
			}
			instances++
			m := a.NewMatcher()
			var times []float64
			ok := true
			for _, id := range append(toks, v.EOS()) {
				start := time.Now()
				m.FillMask(mask)
				times = append(times, float64(time.Since(start).Nanoseconds()))
				if mask[id/32]&(1<<(id%32)) == 0 {
					ok = false
					break
				}
				if err := m.Advance(id); err != nil {
					return fmt.Errorf("%s: mask allowed a token Advance refused: %w", f, err)
				}
			}
			if !ok {
				rejected++ // e.g. a top-level array, which json.gbnf does not allow
				continue
			}
			if sb := m.StateBytes(); sb > maxState {
				maxState, maxStateAt, maxStateToks = sb, f, len(toks)
			}
			reinsNS = append(reinsNS, times...)
			tokens += len(times)
			if len(llamaNS) < *llamaTokens {
				lg, err := ref.Grammar(string(src))
				if err != nil {
					return fmt.Errorf("%s: %w", *grammarFile, err)
				}
				for _, id := range toks {
					start := time.Now()
					lg.FillMask(mask)
					llamaNS = append(llamaNS, float64(time.Since(start).Nanoseconds()))
					if mask[id/32]&(1<<(id%32)) == 0 {
						lg.Close()
						return fmt.Errorf("%s: llama.cpp refused token %d %q that reins allowed", f, id, v.Bytes(id))
					}
					lg.Accept(id)
				}
				lg.Close()
			}
		}
	}
	fmt.Fprintln(stderr)
	fmt.Fprintf(stdout, "grammar %s, vocabulary %s (%d tokens), %d files\n", *grammarFile, filepath.Base(*vocabPath), v.Len(), len(files))
	fmt.Fprintf(stdout, "per-vocabulary work (token trie, %d nodes): %v; grammar compile: %v; cached states: %d\n", trie.Nodes(), trieTime.Round(time.Microsecond), compileTime.Round(time.Microsecond), a.CachedStates())
	fmt.Fprintf(stdout, "valid instances: %d walked, %d rejected by the grammar and skipped; %d masks\n", instances-rejected, rejected, tokens)
	fmt.Fprintf(stdout, "largest matcher state (its own memory, the shared automaton aside) at the end of an instance: %d bytes (%s, %d tokens)\n", maxState, filepath.Base(maxStateAt), maxStateToks)
	fmt.Fprintf(stdout, "\n%-10s %8s %10s %10s %10s %10s %12s\n", "engine", "masks", "avg µs", "p50 µs", "p99 µs", "p99.9 µs", "max µs")
	row := func(name string, ns []float64) (p50 float64) {
		if len(ns) == 0 {
			return 0
		}
		s := slices.Clone(ns)
		slices.Sort(s)
		var sum float64
		for _, x := range s {
			sum += x
		}
		q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] / 1000 }
		fmt.Fprintf(stdout, "%-10s %8d %10.1f %10.1f %10.1f %10.1f %12.1f\n", name, len(s), sum/float64(len(s))/1000, q(0.5), q(0.99), q(0.999), s[len(s)-1]/1000)
		return q(0.5)
	}
	r := row("reins", reinsNS)
	l := row("llama.cpp", llamaNS)
	if l > 0 && r > 0 {
		fmt.Fprintf(stdout, "\nllama.cpp p50 / reins p50 = %.0f×\n", l/r)
	}
	return nil
}

// maskbenchFiles expands folders into their .json files.
func maskbenchFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out, nil
}
