package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/reins-go/reins/extract"
	"github.com/reins-go/reins/internal/fileread"
	"github.com/reins-go/reins/view"
)

// maxConcurrency bounds --concurrency (llama.cpp's sequences).
const maxConcurrency = 64

func cmdExtract(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerServer(fs)
	schema := fs.String("schema", "", "JSON Schema file the values must be valid against (required)")
	instructions := fs.String("instructions", "", "file whose text opens every prompt (default: \""+extract.DefaultInstructions+"\")")
	out := fs.String("out", "", "JSONL output file; documents it already records are skipped (resume). Default: standard output")
	retry := fs.Bool("retry-errors", false, "with --out, extract again the documents of this run that it records only with an error: their error records are taken out of the file, and their new records come at its end")
	concurrency := fs.Int("concurrency", 4, "documents extracted at once")
	textField := fs.String("text-field", "text", "the member of a JSONL line that holds the text")
	idField := fs.String("id-field", "id", "the member of a JSONL line that holds the document's ID")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	seed := fs.Uint64("seed", 0, "random seed for --temperature")
	maxTokens := fs.Int("max-tokens", extract.DefaultMaxTokens, "most tokens of one document's JSON")
	html := htmlFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: reins extract --schema S.json [flags] INPUT...
INPUT is a text file, a folder of them, or a .jsonl file with a text member per line.
One JSON line per document: {"id", "value", "confidence": {"/pointer": p}, "raw", "alternatives"}
or {"id", "error"}. Exit status 1 when a document failed (the others are still written).`)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *schema == "":
		return usagef("extract needs --schema FILE.json")
	case len(pos) == 0:
		return usagef("extract needs at least one INPUT (a text file, a folder or a .jsonl file)")
	case *concurrency < 1 || *concurrency > maxConcurrency:
		return usagef("--concurrency %d: want 1 to %d", *concurrency, maxConcurrency)
	case *maxTokens < 1 || *maxTokens > maxGenTokens:
		return usagef("--max-tokens %d: want 1 to %d", *maxTokens, maxGenTokens)
	case *temp < 0 || *temp > 100:
		return usagef("--temperature %g: want 0 to 100", *temp)
	case *retry && *out == "":
		return usagef("--retry-errors needs --out FILE.jsonl, the output of the run whose errors to retry")
	}
	opts := &extract.Options{Temperature: *temp, Seed: *seed, MaxTokens: *maxTokens}
	if *instructions != "" {
		b, err := fileread.Read(*instructions, extract.MaxDocumentBytes)
		if err != nil {
			return usagef("--instructions: %v", err)
		}
		opts.Instructions = string(b)
	}
	docs, err := extract.ReadInputs(pos, &extract.InputOptions{TextField: *textField, IDField: *idField})
	if err != nil {
		return usagef("%v", err)
	}
	m, err := mf.load(*concurrency)
	if err != nil {
		return err
	}
	defer m.Close()
	x, err := extract.NewFile(m, *schema, opts)
	if err != nil {
		return grammarError{err}
	}
	var w io.Writer = stdout
	var skip map[string]bool
	if *out != "" {
		resume := extract.Resume
		if *retry {
			resume = func(path string) (*os.File, map[string]bool, error) { return extract.ResumeRetryingErrors(path, docs) }
		}
		f, done, err := resume(*out)
		if err != nil {
			return usagef("--out: %v", err)
		}
		defer f.Close()
		w, skip = f, done
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ropts := &extract.RunOptions{Concurrency: *concurrency, Skip: skip}
	todo := 0
	for _, d := range docs {
		if !skip[d.ID] {
			todo++
		}
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && todo > 0 {
		bar := progressbar.NewOptions(todo,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("extract"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("doc"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
		)
		ropts.Progress = func(done, total int) { _ = bar.Set(done) }
	}
	var extracted []view.Extracted
	if *html != "" {
		ropts.Written = func(id string, res *extract.Result) {
			extracted = append(extracted, view.Extracted{ID: id, Result: res})
		}
	}
	st, err := x.Run(ctx, docs, w, ropts)
	fmt.Fprintf(stderr, "extract: %d done, %d failed, %d skipped (already in the output)\n", st.Done, st.Failed, st.Skipped)
	if err != nil {
		return err
	}
	if err := writeHTML(*html, view.FromExtraction(*schema, extracted), stderr); err != nil {
		return err
	}
	if st.Failed > 0 {
		return errors.New("some documents failed; their errors are in the output")
	}
	return nil
}
