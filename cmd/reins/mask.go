package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/backends/llama"
)

func cmdMask(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mask", flag.ContinueOnError)
	cf := constraintFlags{checking: true}
	cf.register(fs)
	vocabPath := fs.String("vocab", "", "GGUF file whose vocabulary to use (vocabulary-only files work)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins mask (--grammar FILE | --regex RE | --schema FILE) --vocab FILE.gguf TEXT")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	cf.seen(fs)
	if len(pos) != 1 || !cf.set() || *vocabPath == "" {
		return usagef("mask takes --grammar FILE, --regex RE or --schema FILE, --vocab FILE.gguf, and one TEXT argument")
	}
	c, err := cf.constraint(stderr)
	if err != nil {
		return err
	}
	quietLlama(false)
	tok, err := llama.LoadTokenizer(*vocabPath)
	if err != nil {
		return err
	}
	defer tok.Close()
	v := tok.Vocab()
	a, err := c.Bind(v, automaton.NewTrie(v))
	if err != nil {
		return grammarError{err}
	}
	ids, err := tok.Tokenize(pos[0], false)
	if err != nil {
		return err
	}
	if string(v.Decode(ids)) != pos[0] {
		// The tokenizer changed the text (invalid UTF-8 becomes U+FFFD):
		// judge its exact bytes.
		var ok bool
		if ids, ok = v.Spell([]byte(pos[0])); !ok {
			return fmt.Errorf("the vocabulary cannot spell TEXT byte for byte")
		}
		fmt.Fprintln(stderr, "reins: the tokenizer does not read TEXT back byte for byte (invalid UTF-8?); masking its exact bytes, spelled with the longest tokens")
	}
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "step\ttoken\tallowed\tthis token\tmask time")
	for i, id := range append(ids, v.EOS()) {
		start := time.Now()
		if err := m.FillMask(mask); err != nil {
			return err
		}
		took := time.Since(start)
		n := 0
		for t := range v.Len() {
			if mask[t/32]&(1<<(t%32)) != 0 {
				n++
			}
		}
		ok := id >= 0 && mask[id/32]&(1<<(id%32)) != 0
		label := strconv.Quote(string(v.Bytes(max(id, 0))))
		if i == len(ids) {
			label = "(end)"
		}
		verdict := "allowed"
		if !ok {
			verdict = "REFUSED"
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%v\n", i, label, n, verdict, took.Round(time.Microsecond))
		if !ok || i == len(ids) {
			break
		}
		if err := m.Advance(id); err != nil {
			return err
		}
		if m.Work() > maskWalkWork {
			w.Flush()
			return fmt.Errorf("no verdict: the masks up to step %d took more than %d units of parsing work (the grammar is too ambiguous for this text)", i, maskWalkWork)
		}
	}
	return w.Flush()
}

// maskWalkWork bounds the parsing work of a whole mask walk: 8 masks at
// automaton.MaskWork each, a few seconds. A walk along an unambiguous
// grammar stays within it (27,337 tokens of JSON along json.gbnf do).
const maskWalkWork = 8 * automaton.MaskWork
