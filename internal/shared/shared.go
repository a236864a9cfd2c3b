// Package shared finds the project's read-only test data, the folder
// "shared" beside the project root (../shared from the module root).
// Nothing from it is copied into the project.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared data folder, or "" when it cannot be found.
// $REINS_SHARED overrides the search.
func Dir() string {
	if d := os.Getenv("REINS_SHARED"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			s := filepath.Join(filepath.Dir(d), "shared")
			if st, err := os.Stat(s); err == nil && st.IsDir() {
				return s
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path returns the path of rel inside the shared folder. When the folder
// or the file is missing it skips the test with a message that says so
// plainly, so that a missing data set is never mistaken for a pass.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d := Dir()
	if d == "" {
		t.Skipf("SHARED DATA MISSING: ../shared (beside the project root) not found; this test needs %s", rel)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SHARED DATA MISSING: %s: %v", p, err)
	}
	return p
}

// Sweep reports whether REINS_SWEEP asks the tests for their full
// sweeps (every input of a data set, every seed, the largest inputs):
// set to anything but "" or "0". By default the slowest tests take a
// fixed sample, so that go test ./... stays within a few minutes on a
// small machine.
func Sweep() bool {
	v := os.Getenv("REINS_SWEEP")
	return v != "" && v != "0"
}

// Sample returns all under Sweep, else every every-th item from the
// first: a sample that is the same at every run.
func Sample[T any](all []T, every int) []T {
	if Sweep() || every <= 1 {
		return all
	}
	var out []T
	for i := 0; i < len(all); i += every {
		out = append(out, all[i])
	}
	return out
}
