package fileread

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(small, 5); err != nil || string(b) != "12345" {
		t.Errorf("Read at the limit = %q, %v", b, err)
	}
	if _, err := Read(small, 4); err == nil {
		t.Error("a file over the limit was read")
	}
	if _, err := Read(dir, 10); err == nil {
		t.Error("a directory was read")
	}
	if _, err := Read("", 10); err == nil {
		t.Error("an empty name was read")
	}
}
