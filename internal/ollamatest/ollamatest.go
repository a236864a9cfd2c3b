// Package ollamatest runs a real Ollama server for tests: built from the
// Go module reins depends on (github.com/ollama/ollama, the version in
// go.mod), started on a free loopback port with its own model store in
// a temporary folder, given GGUF files with "ollama create", and stopped
// at the end.
//
// The binary is built once ("go install", cgo on) into the user cache
// folder, keyed by the version, and reused; the first build compiles
// llama.cpp and ggml and takes minutes, later ones none. A lock file
// keeps packages tested in parallel from building it twice.
package ollamatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/internal/shared"
)

// Module is the Go module the server is built from.
const Module = "github.com/ollama/ollama"

// BuildError is a binary that could not be built (no C compiler, no
// module download): tests skip, saying so loudly.
type BuildError struct {
	Err error
	Log string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("OLLAMA BUILD IMPOSSIBLE: %v\n%s", e.Err, e.Log)
}

func (e *BuildError) Unwrap() error { return e.Err }

// Version returns the version of Module that the main module requires.
func Version() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", Module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", Module, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("go list -m %s: no version", Module)
	}
	return v, nil
}

// Binary returns the path of the ollama binary for the version in go.mod,
// building it on first use. $REINS_OLLAMA names a binary to use instead.
func Binary() (string, error) {
	if p := os.Getenv("REINS_OLLAMA"); p != "" {
		return p, nil
	}
	v, err := Version()
	if err != nil {
		return "", &BuildError{Err: err}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "reins", fmt.Sprintf("ollama-%s-%s-%s", v, runtime.GOOS, runtime.GOARCH))
	bin := filepath.Join(dir, "ollama")
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &BuildError{Err: err}
	}
	lock, err := os.OpenFile(filepath.Join(dir, "build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", &BuildError{Err: err}
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", &BuildError{Err: err}
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // built while we waited
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", &BuildError{Err: err}
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", "-ldflags=-X="+Module+"/version.Version="+strings.TrimPrefix(v, "v"), Module+"@"+v)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=1", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return "", &BuildError{Err: fmt.Errorf("go install %s@%s: %w", Module, v, err), Log: tail(log.String(), 4000)}
	}
	if err := os.Rename(filepath.Join(tmp, "ollama"), bin); err != nil {
		return "", &BuildError{Err: err}
	}
	return bin, nil
}

// Server is a running Ollama server.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	bin  string
	dir  string
	host string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// Start builds (or finds) the binary and starts a server with an empty
// model store. env adds environment variables (OLLAMA_*).
func Start(env ...string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reins-ollama-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, host: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan error, 1)}
	s.URL = "http://" + s.host
	if s.log, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(s.env(),
		"OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"OLLAMA_KEEP_ALIVE=-1",
		"OLLAMA_MAX_LOADED_MODELS=4",
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_CONTEXT_LENGTH=2048",
		"OLLAMA_NOPRUNE=1",
	)
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its runners too, for Stop
	if err := s.cmd.Start(); err != nil {
		s.log.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(60 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// env is the environment of the server and its CLI: HOME in the
// temporary folder (Ollama writes keys there).
func (s *Server) env() []string {
	var out []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OLLAMA_") && !strings.HasPrefix(e, "HOME=") {
			out = append(out, e)
		}
	}
	return append(out, "HOME="+filepath.Join(s.dir, "home"), "OLLAMA_HOST="+s.host)
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("ollama serve exited: %v\n%s", err, s.Log())
		default:
		}
		resp, err := http.Get(s.URL + "/api/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("ollama serve did not answer within %v\n%s", limit, s.Log())
}

// Create makes model name from a GGUF file, as "ollama create" does
// with a Modelfile "FROM ./file.gguf" and the lines given (PARAMETER
// num_thread 1, say).
func (s *Server) Create(name, gguf string, lines ...string) error {
	d, err := os.MkdirTemp(s.dir, "create-")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(gguf)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "model.gguf"), data, 0o644); err != nil {
		return err
	}
	modelfile := "FROM ./model.gguf\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(d, "Modelfile"), []byte(modelfile), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "create", name, "-f", "Modelfile")
	cmd.Dir = d
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ollama create %s: %w\n%s", name, err, tail(string(out), 2000))
	}
	return nil
}

// Log returns the end of the server's log.
func (s *Server) Log() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return tail(string(data), 4000)
}

// Stop stops the server and its runners and removes its folder.
func (s *Server) Stop() error {
	if s.cmd != nil && s.cmd.Process != nil {
		pgid := s.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.done
		}
		syscall.Kill(-pgid, syscall.SIGKILL) // runners that outlived it
	}
	if s.log != nil {
		s.log.Close()
	}
	return os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// IsBuildError reports whether err says the binary could not be built.
func IsBuildError(err error) bool {
	var b *BuildError
	return errors.As(err, &b)
}

// Model names that Shared creates.
const (
	BigramModel  = "reins-bigram" // the fixture's bigram model (internal/fixture)
	StoriesModel = "stories260k"  // ../shared/models/stories260K.gguf
)

// Shared is a server started by the first test that needs it and shared
// by a package's tests, with BigramModel and (when the shared data is
// there) StoriesModel. Declare one in a test file and Stop it in
// TestMain after m.Run.
//
// The models run llama.cpp on one thread (PARAMETER num_thread 1): on a
// loaded two-core machine its thread barrier makes two threads a
// hundred times slower than one.
type Shared struct {
	once    sync.Once
	srv     *Server
	err     error
	stories error // why StoriesModel is missing, if it is
}

// Server returns the shared server, starting it on first use. It skips
// the test, loudly, when Ollama cannot be built here.
func (s *Shared) Server(t testing.TB) *Server {
	t.Helper()
	s.once.Do(s.start)
	if IsBuildError(s.err) {
		t.Skipf("%v", s.err)
	}
	if s.err != nil {
		t.Fatalf("the real Ollama server: %v", s.err)
	}
	return s.srv
}

// Stories returns the shared server with StoriesModel on it, or skips
// the test when the shared data is missing.
func (s *Shared) Stories(t testing.TB) *Server {
	t.Helper()
	srv := s.Server(t)
	if s.stories != nil {
		t.Skipf("SHARED DATA MISSING: stories260K.gguf: %v", s.stories)
	}
	return srv
}

func (s *Shared) start() {
	srv, err := Start()
	if err != nil {
		s.err = err
		return
	}
	s.srv = srv
	dir, err := os.MkdirTemp("", "reins-ollama-models-")
	if err != nil {
		s.err = err
		return
	}
	defer os.RemoveAll(dir)
	p, err := fixture.Path(dir)
	if err == nil {
		err = srv.Create(BigramModel, p, oneThread)
	}
	if err != nil {
		s.err = err
		return
	}
	d := shared.Dir()
	if d == "" {
		s.stories = errors.New("../shared not found beside the project root")
		return
	}
	stories := filepath.Join(d, "models", "stories260K.gguf")
	if _, err := os.Stat(stories); err != nil {
		s.stories = err
		return
	}
	s.stories = srv.Create(StoriesModel, stories, oneThread)
}

const oneThread = "PARAMETER num_thread 1"

// Stop stops the server, if it was started.
func (s *Shared) Stop() {
	if s.srv != nil {
		s.srv.Stop()
	}
}
