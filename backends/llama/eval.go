package llama

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/reins-go/reins/decode"
)

// plan is what one request still needs evaluated.
type plan struct {
	req  *decode.EvalRequest
	next int // index in req.Tokens of the next token to evaluate
	from int // first index whose logits are wanted
}

// Eval evaluates the requests, reusing each sequence's KV cache: only the
// tokens past the longest prefix already cached (in the request's own
// sequence or, failing that, another one) are evaluated. Tokens of
// several requests share llama.cpp batches.
func (m *Model) Eval(ctx context.Context, reqs []decode.EvalRequest) error {
	if m.ctx == nil {
		return ErrClosed
	}
	m.plan = m.plan[:0]
	seen := make([]bool, m.opts.Sequences)
	for i := range reqs {
		r := &reqs[i]
		if err := m.check(r, seen); err != nil {
			return err
		}
		keep := m.reuse(r.Seq, r.Tokens[:len(r.Tokens)-r.Want])
		m.plan = append(m.plan, plan{req: r, next: keep, from: len(r.Tokens) - r.Want})
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries := m.fill()
		if entries == 0 {
			return nil
		}
		t0 := time.Now()
		err := m.ctx.Decode(m.batch)
		m.inLlama += time.Since(t0)
		if err != nil {
			m.forgetPlanned()
			if errors.Is(err, llama.ErrKvCacheFull) {
				return fmt.Errorf("llama.cpp found no room in the KV cache (context %d per sequence): %w", m.nCtx, err)
			}
			return err
		}
		if err := m.collect(); err != nil {
			m.forgetPlanned()
			return err
		}
	}
}

func (m *Model) check(r *decode.EvalRequest, seen []bool) error {
	switch {
	case r.Seq < 0 || r.Seq >= m.opts.Sequences:
		return fmt.Errorf("sequence %d: the model was loaded for %d (Options.Sequences)", r.Seq, m.opts.Sequences)
	case seen[r.Seq]:
		return fmt.Errorf("sequence %d requested twice in one Eval", r.Seq)
	case len(r.Tokens) == 0:
		return fmt.Errorf("sequence %d: no tokens", r.Seq)
	case len(r.Tokens) > m.nCtx:
		return fmt.Errorf("sequence %d: %d tokens exceed the context of %d", r.Seq, len(r.Tokens), m.nCtx)
	case r.Want < 1 || r.Want > len(r.Tokens):
		return fmt.Errorf("sequence %d: want logits for %d of %d positions", r.Seq, r.Want, len(r.Tokens))
	case len(r.Logits) < r.Want*m.nLog:
		return fmt.Errorf("sequence %d: logits buffer holds %d values, need %d", r.Seq, len(r.Logits), r.Want*m.nLog)
	}
	seen[r.Seq] = true
	for i, t := range r.Tokens {
		if t < 0 || t >= m.nLog {
			return fmt.Errorf("sequence %d: token %d at position %d is outside the vocabulary of %d", r.Seq, t, i, m.nLog)
		}
	}
	return nil
}

// reuse makes sequence s hold the longest cached prefix of tokens it can
// get, from its own cache or by copying another sequence's, and returns
// that prefix's length.
func (m *Model) reuse(s int, tokens []int) int {
	own := commonPrefix(m.cached[s], tokens)
	best, from := own, s
	for o := range m.cached {
		if n := commonPrefix(m.cached[o], tokens); o != s && n > best {
			best, from = n, o
		}
	}
	if from != s {
		// llama.cpp copies whole sequences between streams; trim after.
		m.ctx.KvCacheSeqRm(s, -1, -1)
		m.ctx.KvCacheSeqCp(from, s, -1, -1)
		m.cached[s] = append(m.cached[s][:0], m.cached[from]...)
	}
	if best < len(m.cached[s]) && !m.ctx.KvCacheSeqRm(s, best, -1) {
		m.ctx.KvCacheSeqRm(s, -1, -1) // partial removal unsupported: start over
		best = 0
	}
	m.cached[s] = m.cached[s][:best]
	return best
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// fill puts the next tokens of the plans into the batch, at most
// BatchSize per sequence and what llama.cpp accepts in all (it aborts
// past that), and returns how many it added.
func (m *Model) fill() int {
	m.batch.Clear()
	for i := range m.plan {
		p := &m.plan[i]
		for n := 0; n < m.opts.BatchSize && p.next < len(p.req.Tokens) && m.batch.NumTokens() < m.nBatch; n++ {
			m.batch.Add(p.req.Tokens[p.next], nil, p.next, p.next >= p.from, p.req.Seq)
			m.decoded++
			p.next++
		}
	}
	return m.batch.NumTokens()
}

// collect copies out the logits the last batch produced and records what
// each sequence now caches.
func (m *Model) collect() error {
	idx := 0
	for i := range m.plan {
		p := &m.plan[i]
		s := p.req.Seq
		start := len(m.cached[s])
		for j := start; j < p.next; j++ {
			if j >= p.from {
				row := j - p.from
				if !copyLogits(m.ctx, idx, p.req.Logits[row*m.nLog:(row+1)*m.nLog]) {
					return fmt.Errorf("llama.cpp returned no logits for sequence %d position %d", s, j)
				}
			}
			idx++
		}
		m.cached[s] = append(m.cached[s], p.req.Tokens[start:p.next]...)
	}
	return nil
}

// forgetPlanned drops the cache of every sequence in the current plan
// after a failed decode, whose effect on the KV cache is unknown.
func (m *Model) forgetPlanned() {
	for _, p := range m.plan {
		m.ctx.KvCacheSeqRm(p.req.Seq, -1, -1)
		m.cached[p.req.Seq] = m.cached[p.req.Seq][:0]
	}
}
