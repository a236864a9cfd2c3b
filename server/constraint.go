package server

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/jsonschema"
)

// constraintCache keeps the last compiled constraints by source, so that
// clients that send the same schema or grammar with every request pay
// for compiling it, and for binding it to the vocabulary, once. It
// holds at most max constraints, and drops the least recently used
// while they hold more than maxBytes together (Constraint.Bytes: their
// programs and the caches their automata fill as they are used): each
// automaton's caches are bounded on their own, but many constraints that
// fill theirs would otherwise hold gigabytes. As many constraints
// compile at once as there are CPUs: a compile takes tens of MB while it
// runs, and every admitted request (the parallel ones and the queue) had
// compiled its own at the same time (40 distinct schemas: 1.06 GB).
type constraintCache struct {
	compiling chan struct{} // a slot per compile that runs
	mu        sync.Mutex
	max       int
	maxBytes  int64
	order     *list.List // of *cacheEntry, most recent first
	byKey     map[[32]byte]*list.Element
}

type cacheEntry struct {
	key [32]byte
	c   *reins.Constraint
}

func newConstraintCache(max int, maxBytes int64) *constraintCache {
	return &constraintCache{compiling: make(chan struct{}, runtime.GOMAXPROCS(0)), max: max, maxBytes: maxBytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

func (cc *constraintCache) get(kind, src string, compile func() (*reins.Constraint, error)) (*reins.Constraint, error) {
	key := keyOf(kind, src)
	cc.mu.Lock()
	if e, ok := cc.byKey[key]; ok {
		cc.order.MoveToFront(e)
		cc.mu.Unlock()
		cc.trim()
		return e.Value.(*cacheEntry).c, nil
	}
	cc.mu.Unlock()
	c, err := cc.compileOne(key, compile)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if _, ok := cc.byKey[key]; !ok {
		cc.byKey[key] = cc.order.PushFront(&cacheEntry{key, c})
	}
	cc.mu.Unlock()
	cc.trim()
	return c, nil
}

// compileOne runs compile in a compiling slot, released whatever
// compile does, unless a request that held the slot before compiled the
// constraint of key meanwhile (many requests with one new schema).
func (cc *constraintCache) compileOne(key [32]byte, compile func() (*reins.Constraint, error)) (*reins.Constraint, error) {
	cc.compiling <- struct{}{}
	defer func() { <-cc.compiling }()
	cc.mu.Lock()
	e, ok := cc.byKey[key]
	cc.mu.Unlock()
	if ok {
		return e.Value.(*cacheEntry).c, nil
	}
	return compile()
}

// keyOf is the cache's key of a constraint of kind given by src.
func keyOf(kind, src string) [32]byte { return sha256.Sum256([]byte(kind + "\x00" + src)) }

// trim drops the least recently used constraints while there are more
// than max, or they hold more than maxBytes; the most recent stays. The
// sizes are taken without the cache's lock, so that other requests find
// theirs meanwhile.
func (cc *constraintCache) trim() {
	cc.mu.Lock()
	entries := make([]*cacheEntry, 0, cc.order.Len())
	for e := cc.order.Front(); e != nil; e = e.Next() {
		entries = append(entries, e.Value.(*cacheEntry))
	}
	cc.mu.Unlock()
	sizes := make(map[*cacheEntry]int64, len(entries))
	for _, ce := range entries {
		sizes[ce] = ce.c.Bytes()
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var total int64
	for e := cc.order.Front(); e != nil; e = e.Next() {
		total += sizes[e.Value.(*cacheEntry)] // 0 for one added meanwhile: the next trim counts it
	}
	for cc.order.Len() > 1 && (cc.order.Len() > cc.max || total > cc.maxBytes) {
		last := cc.order.Remove(cc.order.Back()).(*cacheEntry)
		total -= sizes[last]
		delete(cc.byKey, last.key)
	}
}

// refuseRefs is the Loader of schemas that come over HTTP: a $ref to
// another document is refused, whatever its scheme, so that a request
// can make the server read neither its files nor the network.
func refuseRefs(url string) ([]byte, error) {
	return nil, fmt.Errorf("$ref to %s refused: the server resolves only references inside the schema", url)
}

// constraint compiles the request's constraint: response_format, grammar
// or regex, at most one, and names the field that gave it. nil when none.
func (s *Server) constraint(c *common) (con *reins.Constraint, param string, ae *apiError) {
	var given []string
	if c.Grammar != nil {
		given = append(given, "grammar")
	}
	if c.Regex != nil {
		given = append(given, "regex")
	}
	rf := c.ResponseFormat
	if rf != nil && rf.Type != "" && rf.Type != "text" {
		given = append(given, "response_format")
	}
	if len(given) > 1 {
		return nil, "", badRequest(given[1], fmt.Sprintf("give one constraint, not %s and %s", given[0], given[1]))
	}
	if len(given) == 0 {
		if rf != nil && rf.Type != "" && rf.Type != "text" {
			return nil, "", badRequest("response_format.type", fmt.Sprintf("%q: want text, json_object or json_schema", rf.Type))
		}
		return nil, "", nil
	}
	var err error
	switch given[0] {
	case "grammar":
		param = "grammar"
		src := *c.Grammar
		if len(src) > s.lim.MaxGrammarBytes {
			return nil, "", badRequest(param, fmt.Sprintf("%d bytes: at most %d", len(src), s.lim.MaxGrammarBytes))
		}
		con, err = s.cache.get("gbnf", src, func() (*reins.Constraint, error) { return reins.Grammar(src) })
	case "regex":
		param = "regex"
		src := *c.Regex
		if len(src) > s.lim.MaxRegexBytes {
			return nil, "", badRequest(param, fmt.Sprintf("%d bytes: at most %d", len(src), s.lim.MaxRegexBytes))
		}
		con, err = s.cache.get("regex", src, func() (*reins.Constraint, error) { return reins.Regex(src) })
	case "response_format":
		switch rf.Type {
		case "json_object":
			param = "response_format"
			// OpenAI's JSON mode writes an object.
			con, err = s.cache.get("json", "", func() (*reins.Constraint, error) {
				return reins.JSONSchema([]byte(`{"type": "object"}`), nil)
			})
		case "json_schema":
			param = "response_format.json_schema.schema"
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return nil, "", badRequest(param, "missing: json_schema needs a schema")
			}
			src := rf.JSONSchema.Schema
			if len(src) > s.lim.MaxSchemaBytes {
				return nil, "", badRequest(param, fmt.Sprintf("%d bytes: at most %d", len(src), s.lim.MaxSchemaBytes))
			}
			con, err = s.cache.get("schema", string(src), func() (*reins.Constraint, error) {
				return reins.JSONSchema(src, &reins.JSONOptions{Loader: refuseRefs, BaseURI: "request:///schema.json"})
			})
		default:
			return nil, "", badRequest("response_format.type", fmt.Sprintf("%q: want text, json_object or json_schema", rf.Type))
		}
	}
	if err != nil {
		return nil, "", constraintError(param, err)
	}
	return con, param, nil
}

// constraintError says where a constraint failed to compile: a
// grammar's line and column, a schema's JSON pointer.
func constraintError(param string, err error) *apiError {
	var ge *grammar.Error
	var se *jsonschema.Error
	switch {
	case errors.As(err, &se):
		return withCode(badRequest(param, "the schema does not compile: "+se.Error()), "invalid_schema")
	case errors.As(err, &ge):
		return withCode(badRequest(param, "does not compile: "+ge.Error()), "invalid_grammar")
	}
	return withCode(badRequest(param, "does not compile: "+err.Error()), "invalid_constraint")
}

// decodeConstraint binds con to the model's vocabulary and returns
// decode's constraint factory, each matcher timed for the mask metric.
func (s *Server) decodeConstraint(con *reins.Constraint) (func() decode.Constraint, error) {
	a, err := con.Bind(s.cfg.Backend.Vocab(), s.trie)
	if err != nil {
		return nil, err
	}
	return func() decode.Constraint { return &timedMatcher{m: a.NewMatcher(), obs: s.metrics.mask} }, nil
}

// timedMatcher is an automaton.Matcher whose masks are timed.
type timedMatcher struct {
	m   *automaton.Matcher
	obs prometheus.Observer
}

var (
	_ decode.Budgeted  = (*timedMatcher)(nil)
	_ decode.Branching = (*timedMatcher)(nil)
)

func (t *timedMatcher) FillMask(mask []uint32) error {
	t0 := time.Now()
	err := t.m.FillMask(mask)
	t.obs.Observe(time.Since(t0).Seconds())
	return err
}

func (t *timedMatcher) FillMaskWithin(mask []uint32, budget int) error {
	t0 := time.Now()
	err := t.m.FillMaskWithin(mask, budget)
	t.obs.Observe(time.Since(t0).Seconds())
	return err
}

func (t *timedMatcher) Advance(tok int) error { return t.m.Advance(tok) }
func (t *timedMatcher) CanEnd() bool          { return t.m.CanEnd() }
func (t *timedMatcher) TokensToEnd() int      { return t.m.TokensToEnd() }
func (t *timedMatcher) Snapshot() int         { return t.m.Snapshot() }
func (t *timedMatcher) Restore(mark int)      { t.m.Restore(mark) }
func (t *timedMatcher) Branches() bool        { return t.m.Branches() }
