package ollamatest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinary builds (or finds) the ollama binary and checks that it is
// the version go.mod requires. Run it once to build the binary before
// the tests that start servers: go test ./internal/ollamatest.
func TestBinary(t *testing.T) {
	bin, err := Binary()
	if IsBuildError(err) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), strings.TrimPrefix(v, "v")) {
		t.Fatalf("%s --version says %q, want %s", bin, out, v)
	}
}
