//go:build cgo

package ollama_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/backends/ollama"
	"github.com/reins-go/reins/decode"
)

// oneToken is the naive strategy: one single-token request per step. It
// asks the server for one token at a time (and never for its JSON
// Schema support, which a one-token answer could not use); the loop
// takes each token, or the likeliest allowed alternative, or what the
// constraint forces, as it does for longer answers.
type oneToken struct{ b decode.TextBackend }

func (o oneToken) Capabilities() decode.Capabilities {
	c := o.b.Capabilities()
	c.JSONSchema, c.Stream = false, false
	return c
}

func (o oneToken) Continue(ctx context.Context, req decode.TextRequest) (*decode.TextResponse, error) {
	req.MaxTokens, req.JSONSchema = 1, nil
	resp, err := o.b.Continue(ctx, req)
	if err == nil && resp.FinishReason == decode.FinishStop && len(resp.Tokens) == 1 {
		resp.FinishReason = decode.FinishLength // one token was asked: it did not end
	}
	return resp, err
}

// extractionDocs are the documents of the extraction benchmark: short
// stories in stories260K's own style.
var extractionDocs = []string{
	"Lily was five years old. She had a red ball and a big dog named Max. ",
	"Tom was a little boy. He was four. He liked to play with his toy car. ",
	"Once upon a time, there was a girl named Sue. She was six and she loved flowers. ",
	"Ben had a cat. Ben was three years old. The cat was soft and white. ",
	"Mia was seven. She went to the park with her mom and saw a bird. ",
	"There was a boy named Sam. Sam was eight and he had a blue kite. ",
	"Anna was a happy girl. She was five. She liked to sing and dance. ",
	"Tim was two years old. He had a big red truck that he loved. ",
}

// extraction is the schema: a character's name and age.
const extraction = `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 1, "maximum": 12}}, "required": ["name", "age"], "additionalProperties": false}`

type extractionStats struct {
	outputs, valid, requests, generated, kept int
}

func (s extractionStats) String() string {
	return fmt.Sprintf("%d/%d valid; %.2f requests per output, %.2f per valid output; %.2f server tokens per kept token",
		s.valid, s.outputs, s.perOutput(), s.perValid(), float64(s.generated)/float64(max(1, s.kept)))
}

func (s extractionStats) perOutput() float64 { return float64(s.requests) / float64(s.outputs) }

// perValid is +Inf when no output was valid.
func (s extractionStats) perValid() float64 { return float64(s.requests) / float64(s.valid) }

// run generates after every prompt under c, with seeds 0..seeds-1, and
// counts; valid checks an output beside the constraint.
func run(b *testing.B, m *reins.Model, c *reins.Constraint, prompts []string, seeds uint64, maxTokens int, valid func(string) bool) extractionStats {
	var st extractionStats
	for _, p := range prompts {
		for seed := range seeds {
			out, err := m.Generate(context.Background(), p, reins.Options{Constraint: c, MaxTokens: maxTokens, Temperature: 0.7, Seed: seed})
			st.outputs++
			if out != nil && out.Usage != nil {
				st.requests += out.Usage.Requests
				st.generated += out.Usage.Generated
				st.kept += out.Usage.Kept
			}
			if err != nil {
				b.Logf("%q seed %d: %v", p, seed, err)
				continue
			}
			if c.Match([]byte(out.Text)) == nil && valid(out.Text) {
				st.valid++
			}
		}
	}
	return st
}

// compare runs both strategies in one run and reports them.
func compare(b *testing.B, c *reins.Constraint, prompts []string, maxTokens int, valid func(string) bool) {
	srv := stories(b)
	be, err := ollama.New(ollama.Options{Model: storiesModel, URLs: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	seeds := uint64(3)
	var ours, naive extractionStats
	for b.Loop() {
		ours = run(b, reins.New(be), c, prompts, seeds, maxTokens, valid)
		naive = run(b, reins.New(oneToken{be}), c, prompts, seeds, maxTokens, valid)
	}
	b.Logf("reins: %v", ours)
	b.Logf("naive: %v", naive)
	report := func(name string, s extractionStats) {
		b.ReportMetric(s.perValid(), name+"-requests/valid")
		b.ReportMetric(s.perOutput(), name+"-requests/output")
		b.ReportMetric(float64(s.generated)/float64(max(1, s.kept)), name+"-server-tokens/kept")
		b.ReportMetric(100*float64(s.valid)/float64(s.outputs), name+"-valid-%")
	}
	report("reins", ours)
	report("naive", naive)
	// Fewer requests per valid output; when the naive strategy makes no
	// valid output, per output (what it spent before it failed: a bound
	// that favours it).
	ratio := naive.perValid() / ours.perValid()
	if naive.valid == 0 {
		ratio = naive.perOutput() / ours.perValid()
	}
	b.ReportMetric(ratio, "x-fewer-requests")
}

// BenchmarkExtraction: a JSON Schema extraction over stories260K served
// by the real Ollama server, reins' strategy beside the naive one (one
// single-token request per step), in one run:
//
//	go test ./backends/ollama -run '^$' -bench . -benchtime 1x
//
// Per strategy: requests per valid output and per output, server tokens
// per kept token, valid outputs (percent); and how many times fewer
// requests reins makes. The constraint allows the layout Ollama's format
// produces (up to 24 whitespace characters between JSON tokens), so that
// the server's own answer under the schema is taken whole. stories260K
// never writes a JSON key by itself: without the server's format, at
// `{"` its top 20 tokens hold neither "name" nor "age", and the naive
// strategy fails there.
func BenchmarkExtraction(b *testing.B) {
	c, err := reins.JSONSchema([]byte(extraction), &reins.JSONOptions{Whitespace: 24})
	if err != nil {
		b.Fatal(err)
	}
	compare(b, c, extractionDocs, 96, func(text string) bool {
		var v struct {
			Name string `json:"name"`
			Age  int    `json:"age"`
		}
		return json.Unmarshal([]byte(text), &v) == nil && v.Age >= 1 && v.Age <= 12
	})
}

// BenchmarkStoryGrammar: the same comparison under a GBNF grammar that
// the model can follow through its top 20 tokens, where the naive
// strategy succeeds too.
func BenchmarkStoryGrammar(b *testing.B) {
	g, err := reins.Grammar(`root ::= " " name " " verb " " rest "."
name ::= "Lily" | "Tom" | "Ben" | "Sue"
verb ::= "was" | "had" | "saw" | "wanted"
rest ::= [a-z]+ (" " [a-z]+){0,8}`)
	if err != nil {
		b.Fatal(err)
	}
	prompts := []string{
		"Once upon a time, there was a little girl named Lily. She loved to play outside. One day,",
		"Tom and Sue went to the park. They saw a big tree. Then",
		"Ben had a red ball. He liked to throw it. One day,",
	}
	compare(b, g, prompts, 60, func(string) bool { return true })
}
