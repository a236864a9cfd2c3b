package llama

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/internal/shared"
)

// fuzzDataBytes is the tensor data appended to every fuzzed header: all
// zeros, as much as the largest seed model needs.
const fuzzDataBytes = 2 << 20

// headerOf returns the header of a GGUF file: everything before its
// tensor data.
func headerOf(t testing.TB, path string) []byte {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size-f.DataOffset > fuzzDataBytes {
		t.Fatalf("%s: %d bytes of tensor data, more than fuzzDataBytes", path, f.Size-f.DataOffset)
	}
	return data[:f.DataOffset]
}

// FuzzLoadChecked mutates the header of small valid models (the fixture,
// a llama model with a byte-level BPE vocabulary, and stories260K, one
// with SentencePiece) over zero tensor data. Whatever the Go checks
// accept (as a model, or as a vocabulary for LoadTokenizer) is loaded in
// llama.cpp in a child process, tokenized, evaluated and generated
// from: the child must not die by a signal or hang. llama.cpp may still
// refuse the file with an error.
//
// Every input the checks accept costs a child process (about half a
// second), so the fuzzer is slow:
//
//	go test ./backends/llama -run '^$' -fuzz FuzzLoadChecked -parallel 1 -fuzztime 30m
func FuzzLoadChecked(f *testing.F) {
	dir := f.TempDir()
	fx, err := fixture.Path(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(headerOf(f, fx))
	if d := shared.Dir(); d != "" {
		f.Add(headerOf(f, filepath.Join(d, "models", "stories260K.gguf")))
	}
	zeros := make([]byte, fuzzDataBytes+32)
	f.Fuzz(func(t *testing.T, header []byte) {
		if len(header) > 1<<20 {
			return
		}
		file := append(append([]byte(nil), header...), zeros[:fuzzDataBytes+(32-len(header)%32)%32]...)
		gf, err := gguf.Read(bytes.NewReader(file), int64(len(file)), "fuzz.gguf")
		if err != nil {
			return
		}
		_, merr := checkModelFile(gf)
		verr := checkVocabFile(gf)
		if merr != nil && verr != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "fuzz.gguf")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runChild(t, path, false)
		if r.crashed() {
			t.Fatalf("the Go checks accepted a file (model: %v; vocabulary: %v) that crashed llama.cpp: %s\n%s", merr, verr, r, r.output)
		}
		if r.code != 0 && merr == nil {
			t.Logf("llama.cpp refused a file the checks accepted: %s", lastLines(r.output, 3))
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}
