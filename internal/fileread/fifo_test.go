//go:build unix

package fileread

import (
	"path/filepath"
	"strings"
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

// TestOpenWriteRefusesANamedPipe: OpenWrite refuses a named pipe at once,
// without waiting for a reader.
func TestOpenWriteRefusesANamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenWrite(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Fatalf("OpenWrite on a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenWrite blocked on a named pipe")
	}
}
