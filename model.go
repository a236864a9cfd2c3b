package reins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/vocab"
)

// Model is a language model ready for the calls of this package: a
// local one whose every logit reins reads (backends/llama), or a server
// that returns a few alternatives per token (backends/openai,
// backends/ollama); the calls are the same. It is safe for concurrent
// use: on a local model, calls share the backend's sequences (each call
// holds one or more while it runs, and waits for one when all are busy)
// and take turns at the backend, one evaluation at a time; a server takes
// them as they come.
type Model struct {
	b      decode.Backend
	logits decode.LogitsBackend // b, when it gives logits
	text   decode.TextBackend   // b, when it is a server
	mu     sync.Mutex           // held around every call of logits
	slots  chan int             // free sequence slots of logits
	n      int                  // all slots

	trieOnce sync.Once
	trie     *automaton.Trie

	jsonMu    sync.Mutex
	jsonTypes map[reflect.Type]*Constraint // JSONFor's constraints, for GenerateJSON

	anyTextOnce sync.Once
	anyText     *Constraint // any text, what Heal constrains an unconstrained output to
	anyTextErr  error

	closeMu sync.Mutex
	closed  bool
	closing chan struct{}  // closed when Close begins: calls waiting for a sequence give up
	calls   sync.WaitGroup // the calls in progress, which Close waits for
}

// New returns a Model over backend b: a decode.LogitsBackend
// (backends/llama.Load gives one for a GGUF file) or a
// decode.TextBackend (a server). When b has a Close method, Model.Close
// calls it.
func New(b decode.Backend) *Model {
	m := &Model{b: b}
	switch b := b.(type) {
	case decode.LogitsBackend:
		m.logits = b
		m.n = max(1, b.MaxSequences())
	case decode.TextBackend:
		m.text = b
		m.n = 1 // Close waits for no sequences; calls go straight to the server
	}
	m.closing = make(chan struct{})
	m.slots = make(chan int, m.n)
	for s := range m.n {
		m.slots <- s
	}
	return m
}

// Builtin returns reins' built-in model: a bigram table over a
// byte-level vocabulary of 265 tokens, computed in Go (no model file, no
// cgo), whose distribution is known exactly. Its text reads like bad
// English; it is for trying the API and for tests. The command line's
// "builtin:bigram" is the same model run by llama.cpp.
func Builtin() *Model {
	return New(fixture.New().NewBackend())
}

// Vocab returns the model's vocabulary, every token's exact bytes; nil
// for a server, whose vocabulary reins does not know.
func (m *Model) Vocab() *vocab.Vocab {
	if m.logits == nil {
		return nil
	}
	return m.logits.Vocab()
}

// Tokenize returns text's token ids under the model's tokenizer, with
// the model's leading special tokens (BOS) when addSpecial is set. A
// server's tokenizer is its own: there it is an error.
func (m *Model) Tokenize(text string, addSpecial bool) ([]int, error) {
	if m.logits == nil {
		return nil, errors.New("reins: a server tokenizes for itself; its tokens are not known here")
	}
	leave, err := m.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logits.Tokenize(text, addSpecial)
}

// Capabilities describes the backend.
func (m *Model) Capabilities() decode.Capabilities { return m.b.Capabilities() }

// Backend returns the backend the model runs on. It is not safe for
// concurrent use: use it only while no call of the Model runs.
func (m *Model) Backend() decode.Backend { return m.b }

// Close waits for the calls in progress, then closes the backend.
// Calls after Close, and calls still waiting for a free sequence when it
// begins, return ErrClosed. It is safe to call more than once.
func (m *Model) Close() error {
	m.closeMu.Lock()
	if m.closed {
		m.closeMu.Unlock()
		return nil
	}
	m.closed = true
	close(m.closing)
	m.closeMu.Unlock()
	m.calls.Wait()
	if c, ok := m.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// tokenTrie returns the vocabulary's token trie, shared by every
// constraint bound to this model.
func (m *Model) tokenTrie() *automaton.Trie {
	m.trieOnce.Do(func() { m.trie = automaton.NewTrie(m.logits.Vocab()) })
	return m.trie
}

// enter begins a call that uses the backend: ErrClosed after Close,
// else leave, which the call runs when it is done with the backend.
// Close waits for every call that entered.
func (m *Model) enter() (leave func(), err error) {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	m.calls.Add(1)
	return m.calls.Done, nil
}

// lease takes up to want free sequence slots, waiting for the first. The
// lease is a decode.Backend over them; release gives them back. The
// caller has entered.
func (m *Model) lease(ctx context.Context, want int) (*lease, error) {
	if m.logits == nil {
		return nil, errors.New("reins: a server has no sequences to lease") // callers check first
	}
	l := &lease{m: m}
	select {
	case s := <-m.slots:
		l.seqs = append(l.seqs, s)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.closing:
		return nil, ErrClosed
	}
	for len(l.seqs) < want {
		select {
		case s := <-m.slots:
			l.seqs = append(l.seqs, s)
			continue
		default:
		}
		break
	}
	return l, nil
}

// lease is a decode.Backend over some of a Model's sequence slots, which
// it numbers from 0; every call takes the model's lock.
type lease struct {
	m    *Model
	seqs []int
	reqs []decode.EvalRequest
}

var _ decode.LogitsBackend = (*lease)(nil)

func (l *lease) release() {
	for _, s := range l.seqs {
		l.m.slots <- s
	}
	l.seqs = nil
}

func (l *lease) Capabilities() decode.Capabilities { return l.m.logits.Capabilities() }
func (l *lease) Vocab() *vocab.Vocab               { return l.m.logits.Vocab() }
func (l *lease) NumLogits() int                    { return l.m.logits.NumLogits() }
func (l *lease) ContextSize() int                  { return l.m.logits.ContextSize() }
func (l *lease) MaxSequences() int                 { return len(l.seqs) }

func (l *lease) Tokenize(text string, addSpecial bool) ([]int, error) {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.m.logits.Tokenize(text, addSpecial)
}

func (l *lease) Eval(ctx context.Context, reqs []decode.EvalRequest) error {
	l.reqs = append(l.reqs[:0], reqs...)
	for i := range l.reqs {
		s := l.reqs[i].Seq
		if s < 0 || s >= len(l.seqs) {
			return fmt.Errorf("sequence %d: the call holds %d", s, len(l.seqs))
		}
		l.reqs[i].Seq = l.seqs[s]
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.m.logits.Eval(ctx, l.reqs)
}
