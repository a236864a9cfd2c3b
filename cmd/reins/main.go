// Command reins generates text with per-token log-probabilities under
// constraints (a regular expression, a GBNF grammar, a JSON Schema),
// chooses among options with the probability of each, and scores text
// token by token, on a GGUF model run in-process by llama.cpp.
//
// Usage:
//
//	reins generate [flags] PROMPT          generate a continuation
//	reins choose --option A --option B ... PROMPT
//	                                        every option's probability
//	reins score [flags] TEXT               log-probability of every token of TEXT
//	reins check (--grammar F | --regex RE | --schema F | --json-value) < TEXT
//
// Run "reins COMMAND -h" for a command's flags. The default model is a
// small built-in test model (a bigram table); give a GGUF path or an
// Ollama name (ollama:llama3.2) with --model.
//
// go build (and go test of this package) optimizes reins with
// default.pgo (profile-guided optimization), a CPU profile of
// "reins maskbench" over every second file of the MaskBench dev set,
// made with
//
//	bin/reins maskbench --cpuprofile cmd/reins/default.pgo $(LC_ALL=C ls -d ../shared/maskbench-dev/* | awk 'NR%2==0')
//
// It makes a token's mask and commit about a tenth faster on the files
// left out of it, and a twentieth on those in it (BENCHMARKS.md). The
// first build with a new profile compiles every package reins imports
// again, apart from the build without it that other packages' tests
// use: about five minutes here.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/llama"
	"github.com/reins-go/reins/internal/fixture"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError is an error in how reins was called; it exits with status 3.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `reins: constrained decoding with token log-probabilities

Usage:
  reins generate [flags] PROMPT   generate a continuation, with logprobs
  reins choose [flags] --option A --option B ... PROMPT
                                  every option's probability after PROMPT
  reins score [flags] TEXT        log-probability of every token of TEXT
  reins check (--grammar F | --regex RE | --schema F | --json-value) < TEXT
                                  is TEXT in the language? (exit 0 yes, 1 no)
  reins run [--var name=value]... [--json] TEMPLATE_FILE
                                  run a program: gen and select holes, each capture's probability
  reins extract --schema S.json [--instructions F] [--out F.jsonl] INPUT...
                                  JSON valid against S from each document, with a confidence per field
  reins serve [--model M] [--addr 127.0.0.1:8080] [--parallel N] [--api-key K]
                                  serve the model over HTTP with OpenAI's API (logprobs, constraints)
  reins view [--out F.html] INPUT.json
                                  an HTML page of tokens shaded by probability (also --html F on generate, score)
  reins mask (--grammar F | --regex RE | --schema F) --vocab FILE.gguf TEXT
                                  token by token: how many tokens the mask allows
  reins bench-grammar [--grammar F] [--vocab F] PATHS...
                                  per-token mask time along MaskBench instances, reins and llama.cpp
  reins maskbench [--vocab F] [--out F] PATHS...
                                  the MaskBench protocol with reins' JSON Schema compiler

Run "reins COMMAND -h" for the flags of a command.

Exit status: 0 success (check: in the language), 1 failure (check: not
in the language; generate: an unfinished output), 3 a usage error or a
constraint that does not compile. Never 2, which the Go runtime uses
when it crashes.
`

// Exit statuses.
const (
	exitFailure = 1
	exitUsage   = 3 // not 2: the Go runtime exits with 2 when it crashes
	exitBug     = 70
)

// run is the whole program, callable from tests.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "reins: internal error (a bug in reins; please report it): %v\n%s", r, debug.Stack())
			code = exitBug
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "generate":
		err = cmdGenerate(args[1:], stdout, stderr)
	case "choose":
		err = cmdChoose(args[1:], stdout, stderr)
	case "score":
		err = cmdScore(args[1:], stdout, stderr)
	case "check":
		err = cmdCheck(args[1:], stdin, stdout, stderr)
	case "mask":
		err = cmdMask(args[1:], stdout, stderr)
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "extract":
		err = cmdExtract(args[1:], stdout, stderr)
	case "serve":
		err = cmdServe(args[1:], stdout, stderr)
	case "view":
		err = cmdView(args[1:], stdin, stdout, stderr)
	case "bench-grammar":
		err = cmdBenchGrammar(args[1:], stdout, stderr)
	case "maskbench":
		err = cmdMaskbench(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q (want generate, choose, score, check, run, extract, serve, view, mask, bench-grammar or maskbench)", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)), errors.As(err, new(grammarError)):
		report(stderr, err)
		return exitUsage
	case errors.Is(err, errRejected):
		return exitFailure
	default:
		report(stderr, err)
		return exitFailure
	}
}

// report prints err on stderr after the command's name, once: the
// library's errors begin with "reins: " themselves.
func report(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "reins: %s\n", strings.TrimPrefix(err.Error(), "reins: "))
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
	remote  remoteFlags // --backend ollama|openai: a server (backend.go; registerServer)
}

// Bounds on what flags may ask of llama.cpp, checked before it sees them.
const (
	maxContext = 1 << 20
)

// BuiltinModel names the built-in test model.
const BuiltinModel = "builtin:bigram"

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", BuiltinModel, "GGUF file, ollama:NAME[:TAG], or "+BuiltinModel+" (a built-in bigram test model)")
	fs.IntVar(&m.ctx, "ctx", 0, "context size in tokens, rounded up to a multiple of 256 (0: the model's, at most 4096)")
	fs.IntVar(&m.threads, "threads", 0, "CPU threads (0: 1 for a model under 8M parameters, else every CPU)")
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
func (m *modelFlags) load(n int) (*reins.Model, error) {
	if m.remote.remote() {
		b, err := m.remote.open(m.model)
		if err != nil {
			return nil, err
		}
		return reins.New(b), nil
	}
	lm, err := m.loadLlama(n)
	if err != nil {
		return nil, err
	}
	return reins.New(lm), nil
}

// loadLlama loads the model the flags name in llama.cpp.
func (m *modelFlags) loadLlama(n int) (*llama.Model, error) {
	if m.remote.remote() {
		return nil, usagef("--backend %s: this command runs a model in process (--backend llama)", m.remote.backend)
	}
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
	switch {
	case m.ctx < 0 || m.ctx > maxContext:
		return nil, usagef("--ctx %d: want 0 (the model's) up to %d tokens", m.ctx, maxContext)
	case m.threads < 0 || m.threads > llama.MaxThreads():
		return nil, usagef("--threads %d: want 0 (automatic) up to %d (4 per CPU)", m.threads, llama.MaxThreads())
	}
	return llama.Load(path, llama.Options{ContextSize: m.ctx, Threads: m.threads, Sequences: n})
}
