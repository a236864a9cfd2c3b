package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/reins-go/reins/grammar"
)

// errRejected makes check exit with status 1.
var errRejected = errors.New("rejected")

func cmdCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var cf constraintFlags
	cf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins check (--grammar FILE | --regex RE) < TEXT\nExit status: 0 accepted, 1 rejected, 2 bad grammar or usage.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || !cf.set() {
		return usagef("check takes --grammar FILE or --regex RE, and the text on standard input")
	}
	p, err := cf.prog(stderr)
	if err != nil {
		return err
	}
	text, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("read standard input: %w", err)
	}
	ps := grammar.NewParser(p)
	line, col := 1, 1
	for i, b := range text {
		if !ps.Push(b) {
			fmt.Fprintf(stdout, "rejected at byte %d (line %d, column %d): %q is not allowed; expected %s\n", i, line, col, b, ps.Expected())
			return errRejected
		}
		if b == '\n' {
			line, col = line+1, 1
		} else if b < 0x80 || b >= 0xC0 { // count characters, not continuation bytes
			col++
		}
	}
	if !ps.CanEnd() {
		fmt.Fprintf(stdout, "rejected at byte %d (line %d, column %d): the text ends too early; expected %s\n", len(text), line, col, ps.Expected())
		return errRejected
	}
	fmt.Fprintln(stdout, "accepted")
	return nil
}
