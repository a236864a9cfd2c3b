//go:build unix

package fileread

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestNamedPipeDoesNotBlock: a named pipe with no writer is refused at
// once; opening it for reading would otherwise wait forever.
func TestNamedPipeDoesNotBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a named pipe was read")
		}
		t.Log(err)
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a named pipe")
	}
}
