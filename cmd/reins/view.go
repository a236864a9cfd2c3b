package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/internal/fileread"
	"github.com/reins-go/reins/internal/jsonkind"
	"github.com/reins-go/reins/view"
)

// maxViewInput bounds what view reads: a response or page JSON (a
// generation of 4,096 tokens with 20 alternatives each is about 6 MB).
// Decoding and writing the page take about 35 bytes of memory per byte.
const maxViewInput = 32 << 20

// htmlFlag registers --html FILE on a command whose output the viewer
// can show (generate, score, run, extract).
func htmlFlag(fs *flag.FlagSet) *string {
	return fs.String("html", "", "also write a self-contained HTML page of the tokens and their probabilities to this file (see reins view)")
}

// writeHTML writes page to path when path is set (the --html flag), and
// says where on stderr. Commands call it with the page of their output:
// view.FromCompletion, view.FromScore, or one of segments and captures
// (a program's, an extraction's).
func writeHTML(path string, page *view.Page, stderr io.Writer) error {
	if path == "" || page == nil {
		return nil
	}
	if err := view.WriteFile(path, page); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	fmt.Fprintf(stderr, "reins: wrote %s\n", path)
	return nil
}

// completionsPage is the page of one or more completions of a prompt.
func completionsPage(title, prompt string, cs ...*reins.Completion) *view.Page {
	if len(cs) == 1 {
		return view.FromCompletion(title, prompt, cs[0])
	}
	p := &view.Page{Title: title, Segments: []view.Segment{{Text: prompt}}}
	for i, c := range cs {
		if c == nil {
			continue
		}
		p.Segments = append(p.Segments, view.Segment{Text: fmt.Sprintf("\n\n--- %d (%s)\n", i, c.FinishReason)}, view.Segment{Tokens: c.Tokens})
	}
	return p
}

func cmdView(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	out := fs.String("out", "", "the HTML file to write (default: INPUT with .html; - for standard output)")
	title := fs.String("title", "", "the page's title")
	prompt := fs.String("prompt", "", "text shown before the tokens (the prompt or context, which the JSON may not hold)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: reins view [flags] INPUT.json
Write a self-contained HTML page of tokens and their probabilities from
INPUT (- for standard input), one JSON value: the JSON of reins generate --json or
reins score --json, a response of reins serve (chat or completions,
with logprobs), or a view.Page ({"segments": [...], "captures": [...]}).`)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("view takes one INPUT argument, got %d", len(pos))
	}
	var data []byte
	if pos[0] == "-" {
		data, err = fileread.ReadAll(stdin, "standard input", maxViewInput)
	} else {
		data, err = fileread.Read(pos[0], maxViewInput)
	}
	if err != nil {
		return err
	}
	page, err := pageOf(data, *prompt)
	if err != nil {
		return usagef("view: %s: %v", pos[0], err)
	}
	if *title != "" {
		page.Title = *title
	} else if page.Title == "" && pos[0] != "-" {
		page.Title = filepath.Base(pos[0])
	}
	dest := *out
	if dest == "" {
		if pos[0] == "-" {
			dest = "-"
		} else {
			dest = strings.TrimSuffix(pos[0], filepath.Ext(pos[0])) + ".html"
		}
	}
	if dest == "-" {
		return view.Write(stdout, page)
	}
	return writeHTML(dest, page, stderr)
}

// pageOf reads the JSON shapes reins writes into a page.
func pageOf(data []byte, prompt string) (*view.Page, error) {
	var probe struct {
		Segments json.RawMessage `json:"segments"`
		Tokens   []reins.Token   `json:"tokens"` // score --json
		Logprobs *struct {       // generate --json
			Content []reins.Token `json:"content"`
		} `json:"logprobs"`
		Choices []struct { // reins serve, generate --json --n
			Logprobs *struct {
				Content []reins.Token `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a byte order mark
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonInputError(data, err)
	}
	var shapes []string
	for _, s := range []struct {
		name string
		in   bool
	}{{"segments", probe.Segments != nil}, {"tokens", probe.Tokens != nil}, {"logprobs", probe.Logprobs != nil}, {"choices", probe.Choices != nil}} {
		if s.in {
			shapes = append(shapes, s.name)
		}
	}
	if len(shapes) > 1 {
		return nil, fmt.Errorf("it holds %s: which to show? (one of them: a view page, score --json, generate --json, a server's response)", strings.Join(shapes, " and "))
	}
	switch {
	case probe.Segments != nil:
		var p view.Page
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, jsonInputError(data, err)
		}
		if err := p.Check(); err != nil {
			return nil, err
		}
		return &p, nil
	case probe.Logprobs != nil:
		if err := view.CheckTokens(probe.Logprobs.Content); err != nil {
			return nil, fmt.Errorf("logprobs.content%w", err)
		}
		c := &reins.Completion{}
		c.Tokens = probe.Logprobs.Content
		return view.FromCompletion("", prompt, c), nil
	case len(probe.Choices) > 0:
		var cs []*reins.Completion
		withLogprobs := false
		for i, ch := range probe.Choices {
			c := &reins.Completion{}
			if ch.Logprobs != nil {
				withLogprobs = true
				if err := view.CheckTokens(ch.Logprobs.Content); err != nil {
					return nil, fmt.Errorf("choices[%d].logprobs.content%w", i, err)
				}
				c.Tokens = ch.Logprobs.Content
			}
			cs = append(cs, c)
		}
		if !withLogprobs {
			return nil, errors.New("no choice holds logprobs.content: ask the server for logprobs")
		}
		return completionsPage("", prompt, cs...), nil
	case probe.Tokens != nil:
		if err := view.CheckTokens(probe.Tokens); err != nil {
			return nil, fmt.Errorf("tokens%w", err)
		}
		return view.FromScore("", prompt, &reins.ScoreResult{Tokens: probe.Tokens}), nil
	}
	return nil, fmt.Errorf("no tokens found: want the JSON of generate --json, score --json, reins serve (with logprobs) or a view page")
}

// jsonInputError says where in data a JSON decoding error is: the line
// and column of the byte at fault, or of the end of a value of the wrong
// type, with its field.
func jsonInputError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s: not JSON: %v", lineColumn(data, syn.Offset-1), err)
	case errors.As(err, &typ):
		where := "the value ending at " + lineColumn(data, typ.Offset-1)
		if typ.Field != "" {
			where += ": " + typ.Field
		}
		if strings.HasPrefix(typ.Value, "number") && typ.Type.Kind() == reflect.Float64 {
			return fmt.Errorf("%s: JSON %s is out of range", where, typ.Value)
		}
		return fmt.Errorf("%s: want %s, got JSON %s", where, jsonkind.Of(typ.Type), typ.Value)
	}
	return fmt.Errorf("not the JSON view reads: %w", err)
}

// lineColumn names byte offset off of data as "line L, column C",
// counting from 1.
func lineColumn(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}
