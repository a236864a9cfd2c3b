package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
)

// TestConstraintCacheBytes checks that the constraint cache drops its
// least recently used constraints while they hold more than its byte
// budget, counting the caches their automata fill after they were
// cached, and that it keeps the most recent one however large.
func TestConstraintCacheBytes(t *testing.T) {
	compiles := map[string]int{}
	get := func(cc *constraintCache, src string) *reins.Constraint {
		t.Helper()
		c, err := cc.get("regex", src, func() (*reins.Constraint, error) {
			compiles[src]++
			return reins.Regex(src)
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	one, err := reins.Regex("[a-z]{3}x")
	if err != nil {
		t.Fatal(err)
	}
	size := one.Bytes()
	if size <= 0 {
		t.Fatalf("a compiled constraint holds %d bytes", size)
	}

	// Three constraints of one size where two fit: the first goes.
	cc := newConstraintCache(64, 2*size+size/2)
	for _, src := range []string{"[a-z]{3}x", "[a-z]{3}y", "[a-z]{3}z"} {
		get(cc, src)
	}
	if cc.order.Len() != 2 {
		t.Fatalf("%d constraints kept under a budget of two", cc.order.Len())
	}
	get(cc, "[a-z]{3}x")
	if compiles["[a-z]{3}x"] != 2 {
		t.Errorf("the least recently used constraint was kept: compiled %d times", compiles["[a-z]{3}x"])
	}

	// A kept constraint whose automaton fills its caches after it was
	// cached grows past the budget: the next request drops it.
	v := fixture.New().NewBackend().Vocab()
	trie := automaton.NewTrie(v)
	cc = newConstraintCache(64, 3*size)
	big := get(cc, "[a-z]{3}x")
	get(cc, "[a-z]{3}y")
	a, err := big.Bind(v, trie)
	if err != nil {
		t.Fatal(err)
	}
	m := a.NewMatcher()
	mask := make([]uint32, automaton.MaskWords(v.Len()))
	if err := m.FillMask(mask); err != nil {
		t.Fatal(err)
	}
	t.Logf("unbound %d, bound with a mask %d", size, big.Bytes())
	if big.Bytes() <= 2*size {
		t.Fatalf("a bound constraint with a mask holds %d bytes, unbound %d: its caches are not counted", big.Bytes(), size)
	}
	get(cc, "[a-z]{3}y") // a hit: the grown one is now the least recent
	if _, kept := cc.byKey[keyOf("regex", "[a-z]{3}x")]; kept {
		t.Errorf("a constraint whose caches grew past the budget was kept (%d bytes, budget %d)", big.Bytes(), cc.maxBytes)
	}

	// The most recent constraint stays, even alone over the budget.
	cc = newConstraintCache(64, 1)
	for i := range 3 {
		get(cc, fmt.Sprintf("[a-z]{%d}", i+1))
	}
	if cc.order.Len() != 1 || cc.order.Front().Value.(*cacheEntry).c.String() == "" {
		t.Fatalf("%d constraints kept under a budget of one byte, want the last", cc.order.Len())
	}
	if _, kept := cc.byKey[keyOf("regex", "[a-z]{3}")]; !kept {
		t.Error("the most recent constraint was dropped")
	}
}

// costlyConstraint fails its mask as an automaton's does when the
// parse passes its work budget.
type costlyConstraint struct{}

func (costlyConstraint) FillMask([]uint32) error {
	return fmt.Errorf("automaton: the mask's parse passed its budget: %w", reins.ErrWorkBudget)
}
func (costlyConstraint) Advance(int) error { return nil }
func (costlyConstraint) CanEnd() bool      { return false }

// TestCostlyConstraintIsABadRequest: a constraint whose masks pass their
// work budget (a grammar waiting for thousands of token terminals, an
// ambiguous one) is the request's fault: a 400 naming the field that
// gave it, not a server error.
func TestCostlyConstraintIsABadRequest(t *testing.T) {
	s, _, _ := newTest(t, Config{})
	con, err := reins.Grammar(`root ::= "a"`)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{prompt: "The", maxTokens: 4, con: con, conParam: "grammar", started: time.Now(),
		opts: decode.Options{MaxTokens: 4, Constraint: func() decode.Constraint { return costlyConstraint{} }}}
	_, err = s.run(context.Background(), j, nil)
	ae := s.runError(httptest.NewRequest("POST", "/v1/completions", nil), err)
	if ae == nil || ae.Status != 400 || ae.Param == nil || *ae.Param != "grammar" || !strings.Contains(ae.Message, "too costly to follow") {
		t.Fatalf("got %+v from %v, want a 400 naming grammar", ae, err)
	}
}

// TestCompilesRunAtMostOnePerCPU: distinct constraints asked for at once
// compile at most GOMAXPROCS at a time, one asked for by many requests
// at once compiles at most as many times, and a compile that panics
// gives its slot back.
func TestCompilesRunAtMostOnePerCPU(t *testing.T) {
	cc := newConstraintCache(64, 1<<30)
	slots := runtime.GOMAXPROCS(0)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 4 * slots {
		wg.Go(func() {
			_, err := cc.get("regex", fmt.Sprint("x", i), func() (*reins.Constraint, error) {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				running.Add(-1)
				return reins.Regex("x")
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := int(most.Load()); m > slots || m < 1 {
		t.Errorf("%d compiles ran at once, want 1 to %d", m, slots)
	}
	// One new schema in many requests at once is compiled by those that
	// took a slot before the first was done, not by every one.
	var compiles atomic.Int32
	for range 4 * slots {
		wg.Go(func() {
			if _, err := cc.get("regex", "same", func() (*reins.Constraint, error) {
				compiles.Add(1)
				time.Sleep(20 * time.Millisecond)
				return reins.Regex("same")
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := int(compiles.Load()); n > slots {
		t.Errorf("one schema asked %d times at once compiled %d times, want at most %d", 4*slots, n, slots)
	}
	for i := range slots {
		func() {
			defer func() { _ = recover() }()
			cc.get("regex", fmt.Sprint("panic", i), func() (*reins.Constraint, error) { panic("compile") })
		}()
	}
	done := make(chan error, 1)
	go func() {
		_, err := cc.get("regex", "after", func() (*reins.Constraint, error) { return reins.Regex("y") })
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a compile after panicking ones waited for a slot")
	}
}
