package ollama_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/ollamatest"
	"github.com/reins-go/reins/internal/shared"
)

// The real server, started by the first test that needs it and shared
// by the package's tests; TestMain stops it.
var real struct {
	once    sync.Once
	srv     *ollamatest.Server
	err     error
	stories error // why stories260K is not there, if it is not
}

// Model names on the real server.
const (
	bigramModel  = "reins-bigram"
	storiesModel = "stories260k"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if real.srv != nil {
		real.srv.Stop()
	}
	os.Exit(code)
}

// server returns the shared real server, with the fixture model as
// bigramModel and, when the shared data is there, stories260K as
// storiesModel. It skips loudly when Ollama cannot be built here.
func server(t testing.TB) *ollamatest.Server {
	t.Helper()
	real.once.Do(func() {
		srv, err := ollamatest.Start()
		if err != nil {
			real.err = err
			return
		}
		real.srv = srv
		dir, err := os.MkdirTemp("", "reins-ollama-models-")
		if err != nil {
			real.err = err
			return
		}
		defer os.RemoveAll(dir)
		p, err := fixture.Path(dir)
		if err == nil {
			err = srv.Create(bigramModel, p)
		}
		if err != nil {
			real.err = err
			return
		}
		stories := filepath.Join(shared.Dir(), "models", "stories260K.gguf")
		if _, err := os.Stat(stories); err != nil || shared.Dir() == "" {
			real.stories = err
			return
		}
		real.stories = srv.Create(storiesModel, stories)
	})
	if ollamatest.IsBuildError(real.err) {
		t.Skipf("%v", real.err)
	}
	if real.err != nil {
		t.Fatalf("the real Ollama server: %v", real.err)
	}
	return real.srv
}

// stories returns the server with stories260K on it, or skips.
func stories(t testing.TB) *ollamatest.Server {
	t.Helper()
	srv := server(t)
	if real.stories != nil {
		t.Skipf("SHARED DATA MISSING: stories260K.gguf: %v", real.stories)
	}
	return srv
}
