package jsonschema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/shared"
)

// BenchmarkCompileMaskBenchDev compiles every schema of
// ../shared/maskbench-dev that compiles, to a grammar and a program: the
// compile half of MaskBench's TTFM without the automaton (which binds a
// vocabulary) or the harness around it. One op is the whole set; the
// per-schema p50 and p99 of the last op are reported beside it.
//
//	go test ./grammar/jsonschema -run '^$' -bench CompileMaskBenchDev -benchtime 3x
func BenchmarkCompileMaskBenchDev(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(shared.Path(b, "maskbench-dev"), "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no MaskBench files: %v", err)
	}
	var schemas [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var mb struct {
			Schema json.RawMessage `json:"schema"`
		}
		if json.Unmarshal(raw, &mb) != nil {
			continue
		}
		if g, err := Compile(mb.Schema, Options{}); err == nil {
			if _, err := grammar.Compile(g); err == nil {
				schemas = append(schemas, mb.Schema)
			}
		}
	}
	times := make([]time.Duration, len(schemas))
	b.ResetTimer()
	for b.Loop() {
		for i, s := range schemas {
			t := time.Now()
			g, err := Compile(s, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := grammar.Compile(g); err != nil {
				b.Fatal(err)
			}
			times[i] = time.Since(t)
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs/schema")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs/schema")
	b.ReportMetric(float64(len(schemas)), "schemas")
}
