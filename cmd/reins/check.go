package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/reins-go/reins"
)

// errRejected makes check exit with status 1.
var errRejected = errors.New("rejected")

func cmdCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cf := constraintFlags{checking: true}
	cf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: reins check (--grammar FILE | --regex RE | --schema FILE | --json-value) < TEXT\nExit status: 0 accepted, 1 rejected (or no verdict, said on stderr: a grammar too ambiguous for the text, or a text too large to validate), 3 bad constraint or usage.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	cf.seen(fs)
	if len(pos) != 0 || !cf.set() {
		return usagef("check takes --grammar FILE, --regex RE, --schema FILE or --json-value, and the text on standard input")
	}
	c, err := cf.constraint(stderr)
	if err != nil {
		return err
	}
	err = c.Check(stdin)
	var rej *reins.RejectError
	var inv *reins.InvalidOutputError
	switch {
	case err == nil:
		fmt.Fprintln(stdout, "accepted")
		return nil
	case errors.As(err, &rej), errors.As(err, &inv):
		fmt.Fprintln(stdout, err)
		return errRejected
	case errors.Is(err, reins.ErrWorkBudget), errors.Is(err, reins.ErrValidateLimit):
		return fmt.Errorf("no verdict: %w", err)
	default:
		return fmt.Errorf("read standard input: %w", err)
	}
}
