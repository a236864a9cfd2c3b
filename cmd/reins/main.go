// Command reins generates text with per-token log-probabilities, and
// scores text token by token, on a local GGUF model run by llama.cpp.
//
// Usage:
//
//	reins generate [flags] PROMPT   generate a continuation
//	reins score [flags] TEXT        log-probability of every token of TEXT
//
// Run "reins COMMAND -h" for a command's flags. The default model is a
// small built-in test model (a bigram table); give a GGUF path or an
// Ollama name (ollama:llama3.2) with --model.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/internal/fixture"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError is an error in how reins was called; it exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `reins: constrained decoding with token log-probabilities

Usage:
  reins generate [flags] PROMPT   generate a continuation, with logprobs
  reins score [flags] TEXT        log-probability of every token of TEXT
  reins check (--grammar FILE | --regex RE) < TEXT
                                  is TEXT in the language? (exit 0 yes, 1 no, 2 bad grammar)
  reins mask (--grammar FILE | --regex RE) --vocab FILE.gguf TEXT
                                  token by token: how many tokens the mask allows
  reins bench-grammar [--grammar F] [--vocab F] PATHS...
                                  per-token mask time along MaskBench instances, reins and llama.cpp
  reins maskbench [--vocab F] [--out F] PATHS...
                                  the MaskBench protocol with reins' JSON Schema compiler

Run "reins COMMAND -h" for the flags of a command.
`

// run is the whole program, callable from tests.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "generate":
		err = cmdGenerate(args[1:], stdout, stderr)
	case "score":
		err = cmdScore(args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(args[1:], stdin, stdout, stderr)
	case "mask":
		err = cmdMask(args[1:], stdout, stderr)
	case "bench-grammar":
		err = cmdBenchGrammar(args[1:], stdout, stderr)
	case "maskbench":
		err = cmdMaskbench(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q (want generate or score)", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)), errors.As(err, new(grammarError)):
		fmt.Fprintf(stderr, "reins: %v\n", err)
		return 2
	case errors.Is(err, errRejected):
		return 1
	default:
		fmt.Fprintf(stderr, "reins: %v\n", err)
		return 1
	}
}

// parse parses flags that may come before or after the positional
// arguments, and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(os.Stdout)
				fs.Usage()
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// modelFlags are the flags every command that loads a model has.
type modelFlags struct {
	model   string
	ctx     int
	threads int
	verbose bool
}

// BuiltinModel names the built-in test model.
const BuiltinModel = "builtin:bigram"

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", BuiltinModel, "GGUF file, ollama:NAME[:TAG], or "+BuiltinModel+" (a built-in bigram test model)")
	fs.IntVar(&m.ctx, "ctx", 0, "context size in tokens (0: the model's, at most 4096)")
	fs.IntVar(&m.threads, "threads", 0, "CPU threads (0: all)")
	fs.BoolVar(&m.verbose, "verbose", false, "show llama.cpp's log")
}

// quietLlama keeps llama.cpp's log (through slog) to errors unless verbose.
func quietLlama(verbose bool) {
	level := slog.LevelError
	if verbose {
		level = slog.LevelInfo
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
}

// load loads the model the flags name, for n sequences.
func (m *modelFlags) load(n int) (*llama.Model, error) {
	quietLlama(m.verbose)
	path := m.model
	if path == BuiltinModel {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		if path, err = fixture.Path(filepath.Join(dir, "reins")); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(path) == "" {
		return nil, usagef("--model is empty")
	}
	return llama.Load(path, llama.Options{ContextSize: m.ctx, Threads: m.threads, Sequences: n})
}
