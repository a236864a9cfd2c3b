package openai_test

import (
	"os"
	"testing"

	"github.com/reins-go/reins/internal/ollamatest"
)

// real is the Ollama server the package's tests share (its /v1 API is
// OpenAI-compatible); TestMain stops it.
var real ollamatest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	real.Stop()
	os.Exit(code)
}
