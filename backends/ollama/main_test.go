package ollama_test

import (
	"os"
	"testing"

	"github.com/reins-go/reins/internal/ollamatest"
)

// real is the Ollama server the package's tests share; TestMain stops it.
var real ollamatest.Shared

const (
	bigramModel  = ollamatest.BigramModel
	storiesModel = ollamatest.StoriesModel
)

func TestMain(m *testing.M) {
	code := m.Run()
	real.Stop()
	os.Exit(code)
}

func server(t testing.TB) *ollamatest.Server  { return real.Server(t) }
func stories(t testing.TB) *ollamatest.Server { return real.Stories(t) }
