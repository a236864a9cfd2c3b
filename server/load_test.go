package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/fixture"
	"github.com/reins-go/reins/server/loadtest"
)

// BenchmarkLoad drives the server on the built-in model (its in-process
// backend) with concurrent streaming clients: free, constrained (regex,
// JSON schema, GBNF) and mixed requests, every constrained output
// validated. One iteration is one request. It reports tokens/s, the
// 50th and 99th percentile of the time to the first token and between
// tokens (in µs), errors and invalid outputs.
//
//	go test -run '^$' -bench Load -benchtime 400x ./server/
func BenchmarkLoad(b *testing.B) {
	for _, bc := range []struct {
		name  string
		kinds []loadtest.Kind
	}{
		{"free", []loadtest.Kind{loadtest.Free}},
		{"constrained", []loadtest.Kind{loadtest.Regex, loadtest.Schema, loadtest.Grammar}},
		{"regex", []loadtest.Kind{loadtest.Regex}},
		{"mixed", []loadtest.Kind{loadtest.Free, loadtest.Regex, loadtest.Free, loadtest.Schema, loadtest.Free, loadtest.Grammar}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			be := fixture.New().NewBackend()
			be.ContextLen = 2048
			s, err := New(Config{Backend: be, Parallel: 8, QueueSize: 64})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer func() { ts.Close(); s.Close() }()
			rep := loadtest.Run(context.Background(), loadtest.Options{BaseURL: ts.URL, Clients: 16, Requests: b.N, MaxTokens: 64, Kinds: bc.kinds})
			reportLoad(b, rep)
		})
	}
}

// reportLoad reports a load run as benchmark metrics, and fails on
// errors and invalid outputs.
func reportLoad(b *testing.B, rep *loadtest.Report) {
	b.Helper()
	st := rep.All
	b.ReportMetric(st.Throughput, "tok/s")
	b.ReportMetric(float64(st.TTFT50.Microseconds()), "ttft-p50-µs")
	b.ReportMetric(float64(st.TTFT99.Microseconds()), "ttft-p99-µs")
	b.ReportMetric(float64(st.TPOT50.Microseconds()), "tpot-p50-µs")
	b.ReportMetric(float64(st.TPOT99.Microseconds()), "tpot-p99-µs")
	b.ReportMetric(float64(st.Errors), "errors")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d requests:\n%s", b.N, rep)
	if st.Errors > 0 || st.Invalid > 0 {
		b.Fatalf("%d errors (first: %s), %d invalid constrained outputs", st.Errors, st.FirstErr, st.Invalid)
	}
}

// TestFaults runs good clients beside clients that disconnect
// mid-stream, stop reading, send oversized or malformed bodies, and
// checks that the good ones are all served, and that afterwards no
// request, slot or goroutine is left.
func TestFaults(t *testing.T) {
	be := fixture.New().NewBackend()
	be.ContextLen = 4096
	// A little time per evaluation, so that streams are in flight when
	// their clients go away.
	be.BeforeEval = func([]decode.EvalRequest) error { time.Sleep(100 * time.Microsecond); return nil }
	s, err := New(Config{Backend: be, Parallel: 4, QueueSize: 64, Limits: Limits{StreamStall: 300 * time.Millisecond, MaxBodyBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	base := runtime.NumGoroutine()
	t0 := time.Now()
	client := &http.Client{Transport: &http.Transport{}}
	post := func(ctx context.Context, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(body))
		return client.Do(req)
	}
	var wg sync.WaitGroup
	// Good clients, through the load generator: all must succeed.
	var rep *loadtest.Report
	wg.Go(func() {
		rep = loadtest.Run(context.Background(), loadtest.Options{BaseURL: ts.URL, Client: client, Clients: 4, Requests: 40, MaxTokens: 32,
			Kinds: []loadtest.Kind{loadtest.Free, loadtest.Regex, loadtest.Schema, loadtest.Grammar}})
	})
	// Clients that go away after a few events.
	for i := range 12 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := post(ctx, fmt.Sprintf(`{"prompt": "The cat", "max_tokens": 2000, "stream": true, "seed": %d, "regex": "[a-z ]+\\\\."}`, i))
			if err != nil {
				return
			}
			r := bufio.NewReader(resp.Body)
			for range 2 + i%5 {
				if _, err := r.ReadString('\n'); err != nil {
					break
				}
			}
			cancel()
			resp.Body.Close()
		})
	}
	// Clients that stop reading a large stream: cut off after StreamStall.
	for i := range 2 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := post(ctx, fmt.Sprintf(`{"prompt": "The", "max_tokens": 4000, "stream": true, "seed": %d, "logprobs": 100}`, i))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 64)
			_, _ = resp.Body.Read(buf)
			// Read nothing more for a while: the server gives up on
			// the stream once its writes stall (or has written it all).
			time.Sleep(time.Second)
		})
	}
	// Oversized and malformed bodies.
	for i := range 6 {
		wg.Go(func() {
			body := `{"prompt": "` + strings.Repeat("x", 100<<10) + `"}`
			if i%2 == 1 {
				body = `{"prompt": "a", "max_tokens": 5, ` // truncated
			}
			resp, err := post(context.Background(), body)
			if err != nil {
				t.Errorf("bad body %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if want := []int{413, 400}[i%2]; resp.StatusCode != want {
				t.Errorf("bad body %d: status %d, want %d", i, resp.StatusCode, want)
			}
		})
	}
	wg.Wait()
	if st := rep.All; st.Errors > 0 || st.Invalid > 0 || st.Requests != 40 {
		t.Errorf("good clients: %d requests, %d errors (%s), %d invalid\n%s", st.Requests, st.Errors, st.FirstErr, st.Invalid, rep)
	}
	t.Logf("good clients beside the faulty ones:\n%s", rep)
	t.Logf("after %s", time.Since(t0).Round(time.Millisecond))

	// Nothing left: every slot free, no request in flight, and the
	// goroutines back to where they were.
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		n := runtime.NumGoroutine()
		if st.FreeSlots == st.Parallel && st.InFlight == 0 && st.Waiting == 0 && s.bt.busy.Load() == 0 && n <= base+2 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("left after the run: %+v, busy %d, goroutines %d (before %d)\n%s", st, s.bt.busy.Load(), n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
