package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reins-go/reins/chat"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/vocab"
)

// batcher puts the evaluations of every sequence in flight into one call
// of the backend. reins.Model takes turns at its backend, one call's
// evaluation at a time; a server has many requests at once, each on its
// own sequence, and llama.cpp evaluates the tokens of several sequences
// in one batch for little more than the cost of one. So the server gives
// each request a slot: a one-sequence decode.LogitsBackend (a view) over
// one sequence of the shared backend; a view's Eval queues its request,
// and one loop evaluates all that are queued together.
//
// By default the loop evaluates what is queued when it comes round
// (continuous batching): while one evaluation runs, the slots that are
// done with the last one queue theirs, and they go together next, so
// the model never idles waiting for a straggler. With maxWait > 0 it
// waits for the other busy slots to queue theirs, at most about as long
// as the last evaluation took (between 50µs and maxWait): fewer, larger
// batches, at the price of a wait per token.
type batcher struct {
	b decode.LogitsBackend
	// mu is held around every call of b, which is not safe for
	// concurrent use.
	mu sync.Mutex

	jobs    chan *evalJob
	quit    chan struct{}
	done    chan struct{}
	busy    atomic.Int32 // slots in use, which may queue an evaluation
	lastRun atomic.Int64 // nanoseconds the last evaluation took
	maxWait time.Duration

	observe func(sequences int, took time.Duration) // metrics; may be nil
}

// evalJob is one view's evaluation, queued for the loop.
type evalJob struct {
	reqs  []decode.EvalRequest // with the backend's sequence numbers
	state atomic.Int32         // jobQueued, jobTaken or jobCancelled
	err   error
	done  chan struct{} // receives when the loop has finished with the job
}

const (
	jobQueued int32 = iota
	jobTaken
	jobCancelled
)

func newBatcher(b decode.LogitsBackend, maxWait time.Duration) *batcher {
	bt := &batcher{b: b, jobs: make(chan *evalJob, b.MaxSequences()), quit: make(chan struct{}), done: make(chan struct{}), maxWait: maxWait}
	go bt.loop()
	return bt
}

// close stops the loop; it must run after every view's last Eval.
func (bt *batcher) close() {
	close(bt.quit)
	<-bt.done
}

func (bt *batcher) loop() {
	defer close(bt.done)
	var batch []*evalJob
	var reqs []decode.EvalRequest
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch = batch[:0]
		select {
		case j := <-bt.jobs:
			batch = bt.take(batch, j)
		case <-bt.quit:
			return
		}
		// Gather the others, up to a wait about one evaluation long.
		wait := min(bt.maxWait, max(50*time.Microsecond, time.Duration(bt.lastRun.Load())))
		if bt.maxWait <= 0 {
			wait = 0
		}
		timer.Reset(wait)
	gather:
		for len(batch) < int(bt.busy.Load()) {
			if wait == 0 { // what is queued now, no waiting
				select {
				case j := <-bt.jobs:
					batch = bt.take(batch, j)
					continue
				default:
				}
				break gather
			}
			select {
			case j := <-bt.jobs:
				batch = bt.take(batch, j)
			case <-timer.C:
				break gather
			case <-bt.quit:
				timer.Stop()
				bt.finish(batch, errors.New("server: shutting down"))
				return
			}
		}
		timer.Stop()
		if len(batch) == 0 {
			continue
		}
		reqs = reqs[:0]
		for _, j := range batch {
			reqs = append(reqs, j.reqs...)
		}
		t0 := time.Now()
		err := bt.eval(reqs)
		if err != nil && len(batch) > 1 {
			// Find whose request failed: each alone.
			for _, j := range batch {
				j.err = bt.eval(j.reqs)
			}
		} else {
			for _, j := range batch {
				j.err = err
			}
		}
		took := time.Since(t0)
		bt.lastRun.Store(int64(took))
		if bt.observe != nil {
			bt.observe(len(reqs), took)
		}
		for _, j := range batch {
			j.done <- struct{}{}
		}
	}
}

// eval calls the backend, a panic in it an error of the requests.
func (bt *batcher) eval(reqs []decode.EvalRequest) (err error) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in the backend's evaluation: %v", p)
		}
	}()
	return bt.b.Eval(context.Background(), reqs)
}

// take adds j to batch unless its caller gave up waiting.
func (bt *batcher) take(batch []*evalJob, j *evalJob) []*evalJob {
	if j.state.CompareAndSwap(jobQueued, jobTaken) {
		return append(batch, j)
	}
	return batch
}

func (bt *batcher) finish(batch []*evalJob, err error) {
	for _, j := range batch {
		j.err = err
		j.done <- struct{}{}
	}
}

// view is one slot: a decode.LogitsBackend over one sequence of the
// batcher's backend. It is used by one request at a time.
type view struct {
	bt  *batcher
	seq int
	job evalJob
	// markers, when set, are the chat format's special tokens by text:
	// Tokenize turns them into those tokens (see chatTokenize).
	markers map[string]int
}

var _ decode.LogitsBackend = (*view)(nil)

func newView(bt *batcher, seq int) *view {
	v := &view{bt: bt, seq: seq}
	v.job.done = make(chan struct{}, 1)
	return v
}

func (v *view) Capabilities() decode.Capabilities { return v.bt.b.Capabilities() }
func (v *view) Vocab() *vocab.Vocab               { return v.bt.b.Vocab() }
func (v *view) NumLogits() int                    { return v.bt.b.NumLogits() }
func (v *view) ContextSize() int                  { return v.bt.b.ContextSize() }
func (v *view) MaxSequences() int                 { return 1 }

func (v *view) Tokenize(text string, addSpecial bool) ([]int, error) {
	if len(v.markers) > 0 {
		return v.chatTokenize(text, addSpecial)
	}
	return v.tokenize(text, addSpecial)
}

func (v *view) tokenize(text string, addSpecial bool) ([]int, error) {
	v.bt.mu.Lock()
	defer v.bt.mu.Unlock()
	return v.bt.b.Tokenize(text, addSpecial)
}

// chatTokenize tokenizes a prompt the chat format wrote: its markers
// become their special tokens, the text between is tokenized as text
// (the messages were checked to hold no marker).
func (v *view) chatTokenize(text string, addSpecial bool) ([]int, error) {
	return chat.TokenizeMarked(text, addSpecial, v.markers, v.tokenize)
}

// Eval queues the request for the batcher's next evaluation and waits
// for it. A cancelled ctx returns at once unless the evaluation has
// begun; then it waits for that one evaluation to end.
func (v *view) Eval(ctx context.Context, reqs []decode.EvalRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &v.job
	j.reqs = append(j.reqs[:0], reqs...)
	for i := range j.reqs {
		if j.reqs[i].Seq != 0 {
			return fmt.Errorf("sequence %d: a slot holds one sequence", j.reqs[i].Seq)
		}
		j.reqs[i].Seq = v.seq
	}
	j.err = nil
	j.state.Store(jobQueued)
	select {
	case v.bt.jobs <- j:
	case <-v.bt.quit:
		return errors.New("server: shutting down")
	}
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobCancelled) {
			return ctx.Err()
		}
		<-j.done // taken: the loop is using the buffers
		return ctx.Err()
	}
}
