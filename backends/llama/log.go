package llama

/*
extern void reinsLlamaLog(int level, char * text, void * user_data);
*/
import "C"

import (
	"context"
	"log/slog"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// llama.cpp has one log callback for the whole process (llama_log_set
// sets it for llama.cpp and ggml alike). reins installs its own, once,
// and points it at a logSink through the callback's user data, a
// cgo.Handle:
//
//   - A Load points llama.cpp's log at a sink for its Options.Logger
//     for the whole load, so every message of the load reaches that
//     logger, and the load's warnings and errors are kept for its error
//     message. Loads take turns (logMu).
//   - After the load the log stays pointed at that sink: what llama.cpp
//     prints later, while any model evaluates, goes to the logger of the
//     most recent Load whose model is still open. When that model is
//     closed, the log goes back to the logger of the Load before it (if
//     that model is still open), and so on; with none open it is
//     discarded.
//   - A nil Logger discards; LoadTokenizer discards and keeps the
//     log where it was.
//
// llama.cpp's messages do not say which model they are about, and its
// threads call the callback without reins knowing which model is
// running, so no finer routing is possible.

// logMu serialises changes to llama.cpp's process-wide log callback and
// the loads that capture it. Like backendInit, it stands for state that
// is process-wide in C; nothing else in this package is package-level
// and mutable.
var logMu sync.Mutex

// logSink routes llama.cpp's log lines to a slog.Logger and, during a
// load, keeps the warnings and errors for the load's error message.
type logSink struct {
	logger *slog.Logger // nil: discard
	prev   *logSink     // the sink installed before this one, under logMu
	handle cgo.Handle   // this sink's handle, 0 once closed; under logMu

	mu      sync.Mutex
	line    strings.Builder // the line being assembled: llama.cpp sends pieces
	level   C.int           // the level of that line
	capture bool
	caught  []caughtLine // warnings and errors while capturing, at most maxCaught
}

// caughtLine is a warning or error llama.cpp logged during a load.
type caughtLine struct {
	level slog.Level
	msg   string
}

// Log levels of ggml's enum ggml_log_level.
const (
	ggmlLogNone  = 0
	ggmlLogDebug = 1
	ggmlLogInfo  = 2
	ggmlLogWarn  = 3
	ggmlLogError = 4
	ggmlLogCont  = 5 // continues the previous message
)

const (
	maxCaught     = 12  // lines a load keeps for its error
	maxCaughtLine = 400 // bytes of each kept line
	maxLogLine    = 64 << 10
)

// installSink points llama.cpp's log at s (nil: discard), with logMu
// held. The first call also replaces ollama's callback with reins'.
func installSink(s *logSink) {
	h := cgo.Handle(0)
	if s != nil {
		h = s.handle
	}
	setLogHandle(h)
}

// newSink makes a sink for logger, capturing, and makes it the
// installed one, with logMu held. prev is the sink to fall back on once
// this one is closed.
func newSink(logger *slog.Logger, prev *logSink) *logSink {
	// Drop closed sinks from the fallback chain, so that it holds only
	// sinks of open models and the few closed since the last load.
	for p := prev; p != nil; p = p.prev {
		for p.prev != nil && p.prev.handle == 0 {
			p.prev = p.prev.prev
		}
	}
	s := &logSink{logger: logger, prev: prev, capture: true}
	s.handle = cgo.NewHandle(s)
	installSink(s)
	return s
}

// installed returns the sink llama.cpp's log points at, with logMu held.
func installed() *logSink {
	h := logHandle()
	if h == 0 {
		return nil
	}
	s, _ := sinkOf(h)
	return s
}

// close retires s, with logMu held: when it is installed, the log falls
// back to the most recent earlier sink still open.
func (s *logSink) close() {
	if s == nil || s.handle == 0 {
		return
	}
	if installed() == s {
		next := s.prev
		for next != nil && next.handle == 0 {
			next = next.prev
		}
		installSink(next)
	}
	s.handle.Delete()
	s.handle = 0
	s.mu.Lock()
	s.logger = nil
	s.mu.Unlock()
}

// endCapture stops keeping lines and returns those that explain a
// failure: the errors, or the warnings when there is no error.
func (s *logSink) endCapture() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capture = false
	var errs, warns []string
	for _, c := range s.caught {
		if c.level >= slog.LevelError {
			errs = append(errs, c.msg)
		} else {
			warns = append(warns, c.msg)
		}
	}
	s.caught = nil
	if len(errs) > 0 {
		return errs
	}
	return warns
}

func sinkOf(h cgo.Handle) (s *logSink, ok bool) {
	defer func() {
		if recover() != nil { // a handle deleted while llama.cpp was calling it
			s, ok = nil, false
		}
	}()
	s, ok = h.Value().(*logSink)
	return s, ok
}

//export reinsLlamaLog
func reinsLlamaLog(level C.int, text *C.char, userData unsafe.Pointer) {
	h := cgo.Handle(uintptr(userData))
	if h == 0 || text == nil {
		return
	}
	s, ok := sinkOf(h)
	if !ok || s == nil {
		return
	}
	s.write(level, C.GoString(text))
}

// write adds a piece of a message; each complete line is one record.
func (s *logSink) write(level C.int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if level != ggmlLogCont {
		if s.line.Len() > 0 && level != s.level {
			s.emit()
		}
		s.level = level
	}
	for text != "" {
		line, rest, full := strings.Cut(text, "\n")
		if s.line.Len() < maxLogLine {
			s.line.WriteString(line[:min(len(line), maxLogLine-s.line.Len())])
		}
		if !full {
			break
		}
		s.emit()
		text = rest
	}
}

// emit sends the assembled line, with s.mu held.
func (s *logSink) emit() {
	msg := strings.TrimSpace(s.line.String())
	s.line.Reset()
	if msg == "" {
		return
	}
	lvl := slogLevel(s.level)
	if s.capture && lvl >= slog.LevelWarn && len(s.caught) < maxCaught {
		if len(msg) > maxCaughtLine {
			msg = msg[:maxCaughtLine] + "..."
		}
		s.caught = append(s.caught, caughtLine{lvl, msg})
	}
	if s.logger != nil && s.logger.Enabled(context.Background(), lvl) {
		s.logger.LogAttrs(context.Background(), lvl, msg, slog.String("source", "llama.cpp"))
	}
}

func slogLevel(l C.int) slog.Level {
	switch l {
	case ggmlLogDebug:
		return slog.LevelDebug
	case ggmlLogWarn:
		return slog.LevelWarn
	case ggmlLogError:
		return slog.LevelError
	}
	return slog.LevelInfo
}
