package jsonschema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reins-go/reins/internal/shared"
)

// BenchmarkCompileMaskBenchDev compiles every schema of
// ../shared/maskbench-dev that compiles, to a grammar and a program with
// CompileProg, as reins maskbench does: the compile half of MaskBench's
// TTFM without the automaton (which binds a vocabulary) or the harness
// around it. One op is the whole set; the
// per-schema p50 and p99 of the last op are reported beside it, and of
// each schema's fastest op (min-p50, min-p99): on a busy machine the
// minimum over a few ops drops the drift and the collector's pauses,
// and compares two versions of the code where one pass does not.
//
//	go test ./grammar/jsonschema -run '^$' -bench CompileMaskBenchDev -benchtime 4x
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
		if _, _, err := CompileProg(mb.Schema, Options{}); err == nil {
			schemas = append(schemas, mb.Schema)
		}
	}
	times := make([]time.Duration, len(schemas))
	fastest := make([]time.Duration, len(schemas))
	b.ResetTimer()
	for b.Loop() {
		for i, s := range schemas {
			t := time.Now()
			if _, _, err := CompileProg(s, Options{}); err != nil {
				b.Fatal(err)
			}
			times[i] = time.Since(t)
			if fastest[i] == 0 || times[i] < fastest[i] {
				fastest[i] = times[i]
			}
		}
	}
	slices.Sort(times)
	slices.Sort(fastest)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs/schema")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs/schema")
	b.ReportMetric(float64(fastest[len(fastest)/2].Microseconds()), "min-p50-µs/schema")
	b.ReportMetric(float64(fastest[len(fastest)*99/100].Microseconds()), "min-p99-µs/schema")
	b.ReportMetric(float64(len(schemas)), "schemas")
}
