// Package remote is what reins' server backends (backends/openai,
// backends/ollama) share: one or more endpoints taken in turn with health
// checks, requests retried with backoff on 429 and 5xx (honouring
// Retry-After), timeouts, bounded reads of answers and of streamed lines,
// and the checks that turn what a server says of a token into a
// decode.Token whose bytes are right.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout          = 5 * time.Minute
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultRetries          = 3
	DefaultBackoff          = 250 * time.Millisecond
	DefaultMaxBackoff       = 10 * time.Second
	DefaultMaxResponseBytes = 32 << 20
	DefaultMaxLineBytes     = 4 << 20
	DefaultCooldown         = 5 * time.Second
	healthTimeout           = 3 * time.Second
	maxErrorBody            = 4 << 10
)

// Options configures a Client. The zero value of every field but URLs
// is a sensible default.
type Options struct {
	// URLs are the endpoints' base URLs, taken in turn (round-robin);
	// one that fails is left out until a health check passes.
	URLs []string
	// Header is sent with every request (an API key's Authorization,
	// extra headers).
	Header http.Header
	// HTTPClient, when set, sends the requests; its Timeout should be 0
	// (Timeout and IdleTimeout bound each attempt). The default client
	// follows no redirect: a request's body and headers (an API key) go
	// only to the URL given, and a 3xx answer is an error that says
	// where the server points.
	HTTPClient *http.Client
	// Timeout bounds one attempt, answer included (DefaultTimeout).
	Timeout time.Duration
	// IdleTimeout bounds the wait for the answer's headers and then
	// between two lines of a streamed answer (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Retries is how many times a failed attempt is tried again on
	// another turn of the endpoints (DefaultRetries); negative: never.
	Retries int
	// Backoff is the first wait before a retry, doubled each time up to
	// MaxBackoff, with jitter; a Retry-After header sets the wait
	// instead, up to MaxBackoff (beyond it the request fails and says
	// how long the server asked for).
	Backoff, MaxBackoff time.Duration
	// MaxResponseBytes bounds a whole answer, streamed or not
	// (DefaultMaxResponseBytes); MaxLineBytes one line of a stream
	// (DefaultMaxLineBytes).
	MaxResponseBytes int64
	MaxLineBytes     int
	// HealthPath is fetched (GET, 2xx wanted) before an endpoint that
	// failed is used again; Cooldown is how long a failed endpoint rests
	// first (DefaultCooldown).
	HealthPath string
	Cooldown   time.Duration
}

// Client sends requests to a server's endpoints. It is safe for
// concurrent use.
type Client struct {
	opts Options
	http *http.Client
	eps  []*endpoint
	mu   sync.Mutex
	next int
}

type endpoint struct {
	base      *url.URL
	mu        sync.Mutex
	downUntil time.Time // zero: healthy
	lastErr   error
}

// New checks opts and returns a Client.
func New(opts Options) (*Client, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("no server URL")
	}
	switch {
	case opts.Timeout < 0:
		return nil, fmt.Errorf("Timeout %v: want ≥ 0 (0: %v)", opts.Timeout, DefaultTimeout)
	case opts.IdleTimeout < 0:
		return nil, fmt.Errorf("IdleTimeout %v: want ≥ 0 (0: %v)", opts.IdleTimeout, DefaultIdleTimeout)
	case opts.Backoff < 0 || opts.MaxBackoff < 0 || opts.Cooldown < 0:
		return nil, errors.New("Backoff, MaxBackoff and Cooldown: want ≥ 0")
	case opts.MaxResponseBytes < 0 || opts.MaxLineBytes < 0:
		return nil, errors.New("MaxResponseBytes and MaxLineBytes: want ≥ 0")
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.Backoff == 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.Cooldown == 0 {
		opts.Cooldown = DefaultCooldown
	}
	c := &Client{opts: opts, http: opts.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	for _, s := range opts.URLs {
		u, err := url.Parse(strings.TrimRight(s, "/"))
		if err != nil {
			return nil, fmt.Errorf("server URL %q: %w", s, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("server URL %q: want http://HOST[:PORT][/PATH] or https://...", s)
		}
		c.eps = append(c.eps, &endpoint{base: u})
	}
	return c, nil
}

// StatusError is an answer with an HTTP error status.
type StatusError struct {
	URL        string
	StatusCode int
	Message    string        // the server's message, trimmed
	RetryAfter time.Duration // what Retry-After asked for, if anything
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (the server asks to retry after %v)", e.RetryAfter)
	}
	return msg
}

// retriable reports whether a status may succeed if tried again.
func retriable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500 && code != http.StatusNotImplemented
}

// ErrStreamCut is wrapped by the error of a streamed answer that broke
// off after some of its lines were taken.
var ErrStreamCut = errors.New("the answer broke off")

// Line is called with each line of an answer (its bytes are valid only
// during the call); it returns false to stop reading, which ends the
// request.
type Line func(line []byte) (more bool, err error)

// Post sends body as JSON to path on an endpoint and passes each line of
// the answer to each. A failure before the first line was taken (no
// connection, a reset, a 429 or 5xx, a timeout) is tried again on
// another turn, up to Options.Retries times; one after is returned,
// wrapping ErrStreamCut. An answer that is not 2xx is a *StatusError.
func (c *Client) Post(ctx context.Context, path string, body any, each Line) error {
	return c.post(ctx, path, body, c.opts.MaxResponseBytes, each)
}

// post is Post with the answer bounded by limit bytes.
func (c *Client) post(ctx context.Context, path string, body any, limit int64, each Line) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	var last error
	for attempt := 0; ; attempt++ {
		e := c.pick(ctx)
		taken, wait, err := c.attempt(ctx, e, path, data, limit, each)
		if err == nil {
			e.up()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *StatusError
		isStatus := errors.As(err, &se)
		if taken || (isStatus && !retriable(se.StatusCode)) {
			return err
		}
		e.down(err, c.opts.Cooldown)
		last = err
		if attempt >= c.opts.Retries {
			break
		}
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		if wait > c.opts.MaxBackoff {
			return fmt.Errorf("%w; not retried: it asks for a wait of %v, above %v", err, wait, c.opts.MaxBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return fmt.Errorf("%w (after %d attempts)", last, c.opts.Retries+1)
}

// PostJSON sends body and decodes the whole answer into out. The
// answer is bounded by limit bytes where that is less than
// Options.MaxResponseBytes (0: no bound of its own), and by shape before
// it is decoded: a caller that knows how long a true answer can be
// keeps a server's from growing into many times its size in memory as
// it is decoded.
func (c *Client) PostJSON(ctx context.Context, path string, body, out any, limit int64, shape Shape) error {
	if limit <= 0 || limit > c.opts.MaxResponseBytes {
		limit = c.opts.MaxResponseBytes
	}
	var buf []byte
	err := c.post(ctx, path, body, limit, func(line []byte) (bool, error) {
		buf = append(buf, line...)
		buf = append(buf, '\n')
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := shape.check(buf); err != nil {
		return err
	}
	if err := json.Unmarshal(buf, out); err != nil {
		return fmt.Errorf("the server's answer is not the JSON expected: %w", err)
	}
	return nil
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.Backoff << min(attempt, 20)
	d = min(d, c.opts.MaxBackoff)
	return d/2 + rand.N(d/2+1) // jitter
}

// attempt sends one request; taken says whether a line reached each.
func (c *Client) attempt(ctx context.Context, e *endpoint, path string, data []byte, limit int64, each Line) (taken bool, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	u := e.base.JoinPath(path).String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return false, 0, err
	}
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, application/x-ndjson, text/event-stream")
	idle := time.AfterFunc(c.opts.IdleTimeout, cancel)
	defer idle.Stop()
	resp, err := c.http.Do(req)
	if err != nil {
		return false, 0, c.timeout(ctx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		se := &StatusError{URL: u, StatusCode: resp.StatusCode, Message: ErrorMessage(msg), RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode <= 399 && loc != "" {
			se.Message = fmt.Sprintf("the server redirects to %q, which reins does not follow: give that URL", loc[:min(len(loc), 500)])
		}
		return false, se.RetryAfter, se
	}
	body := io.LimitReader(resp.Body, limit+1)
	r := bufio.NewReaderSize(body, 64<<10)
	var read int64
	var line []byte
	for {
		idle.Reset(c.opts.IdleTimeout)
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		read += int64(len(chunk))
		if read > limit {
			return taken, 0, fmt.Errorf("%s: the answer is longer than %d bytes", u, limit)
		}
		if err == bufio.ErrBufferFull {
			if len(line) > c.opts.MaxLineBytes {
				return taken, 0, fmt.Errorf("%s: a line of the answer is longer than %d bytes", u, c.opts.MaxLineBytes)
			}
			continue
		}
		if len(line) > c.opts.MaxLineBytes {
			return taken, 0, fmt.Errorf("%s: a line of the answer is longer than %d bytes", u, c.opts.MaxLineBytes)
		}
		if err != nil && err != io.EOF {
			// The answer broke off inside this line: drop it.
			err = c.timeout(ctx, u, err)
			if taken {
				return taken, 0, fmt.Errorf("%w: %w", ErrStreamCut, err)
			}
			return taken, 0, err
		}
		if t := bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(t)) > 0 {
			taken = true
			more, herr := each(t)
			if herr != nil {
				return taken, 0, herr
			}
			if !more {
				return taken, 0, nil
			}
		}
		line = line[:0]
		if err == io.EOF {
			return taken, 0, nil
		}
	}
}

// timeout words an error that the attempt's deadline or the idle timer
// caused.
func (c *Client) timeout(ctx context.Context, u string, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s: no answer within %v: %w", u, c.opts.Timeout, context.DeadlineExceeded)
		}
		return fmt.Errorf("%s: no answer or line of it from the server within %v: %w", u, c.opts.IdleTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %w", u, err)
}

// ReportsError reports whether an answer's "error" field, raw, says
// something went wrong: absent, null, false, "" and {} say nothing did.
func ReportsError(raw json.RawMessage) bool {
	switch strings.Join(strings.Fields(string(raw)), "") {
	case "", "null", "false", `""`, "{}":
		return false
	}
	return true
}

// ErrorMessage takes the message out of an error body: OpenAI's
// {"error": {"message": ...}}, Ollama's {"error": "..."}, or the text.
func ErrorMessage(b []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &v) == nil && len(v.Error) > 0 {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return s
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &o) == nil && o.Message != "" {
			return o.Message
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s >= 0 { // NaN and negative waits are no wait asked for
			// Up to about 31 years, which time.Duration holds.
			return time.Duration(min(s, 1e9) * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// pick returns the next endpoint in turn that is healthy, or whose rest
// is over and whose health check passes; when none is, the one that
// rests the shortest.
func (c *Client) pick(ctx context.Context) *endpoint {
	c.mu.Lock()
	start := c.next
	c.next = (c.next + 1) % len(c.eps)
	c.mu.Unlock()
	var soonest *endpoint
	now := time.Now()
	for i := range c.eps {
		e := c.eps[(start+i)%len(c.eps)]
		e.mu.Lock()
		until := e.downUntil
		e.mu.Unlock()
		if until.IsZero() {
			return e
		}
		if now.After(until) && c.healthy(ctx, e) {
			e.up()
			return e
		}
		if soonest == nil || until.Before(soonest.downUntil) {
			soonest = e
		}
	}
	return soonest
}

// healthy fetches the health path of e.
func (c *Client) healthy(ctx context.Context, e *endpoint) bool {
	if c.opts.HealthPath == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath(c.opts.HealthPath).String(), nil)
	if err != nil {
		return false
	}
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		e.down(err, c.opts.Cooldown)
		return false
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e.down(fmt.Errorf("health check: HTTP %d", resp.StatusCode), c.opts.Cooldown)
		return false
	}
	return true
}

func (e *endpoint) up() {
	e.mu.Lock()
	e.downUntil, e.lastErr = time.Time{}, nil
	e.mu.Unlock()
}

func (e *endpoint) down(err error, rest time.Duration) {
	e.mu.Lock()
	e.downUntil, e.lastErr = time.Now().Add(rest), err
	e.mu.Unlock()
}

// Healthy reports, per endpoint in the order given, whether it is in
// use (not resting after a failure).
func (c *Client) Healthy() []bool {
	out := make([]bool, len(c.eps))
	for i, e := range c.eps {
		e.mu.Lock()
		out[i] = e.downUntil.IsZero()
		e.mu.Unlock()
	}
	return out
}
