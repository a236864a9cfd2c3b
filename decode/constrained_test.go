package decode_test

import (
	"context"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/automaton"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/internal/fixture"
)

func TestConstrainedGenerationFollowsGrammar(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= "The " ("cat" | "dog" | "bird") " sat on the " [a-z]+ "."`)
	re := regexp.MustCompile(`^The (cat|dog|bird) sat on the [a-z]+\.$`)
	for seed := range uint64(20) {
		c, err := decode.Complete(context.Background(), b, "Once", decode.Options{
			MaxTokens: 60, TopLogprobs: 3, Constraint: matcherOf(a),
			Sampling: decode.SamplingOptions{Temperature: 1, Seed: seed},
		})
		require.NoError(t, err)
		require.Equal(t, decode.FinishStop, c.FinishReason, "seed %d: %q", seed, c.Text)
		assert.Regexp(t, re, c.Text)
		sawForced := false
		for _, tok := range c.Tokens {
			require.NotNil(t, tok.Constrained)
			assert.GreaterOrEqual(t, tok.Constrained.Logprob, tok.Logprob-1e-5, "renormalising never lowers a probability")
			assert.LessOrEqual(t, tok.Constrained.Logprob, 1e-6)
			if tok.Forced {
				sawForced = true
				assert.Zero(t, tok.Constrained.Logprob)
			}
			if n := len(tok.Constrained.TopLogprobs); n > 0 {
				assert.GreaterOrEqual(t, tok.Constrained.TopLogprobs[0].Logprob, tok.Constrained.Logprob, "the best alternative is at least as likely")
			}
		}
		assert.True(t, sawForced, "\"The \" and \" sat on the \" are forced")
	}
}

func TestConstrainedLogprobsRenormalise(t *testing.T) {
	m, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= ("a" | "b" | "c") "."`)
	c, err := decode.Complete(context.Background(), b, "The", decode.Options{MaxTokens: 5, TopLogprobs: 3, Constraint: matcherOf(a)})
	require.NoError(t, err)
	require.NotEmpty(t, c.Tokens)
	first := c.Tokens[0]
	prompt, _ := b.Tokenize("The", true)
	row := m.Table[prompt[len(prompt)-1]]
	z := math.Log(math.Exp(float64(row[b.Vocab().Len()-1]))*0 +
		math.Exp(float64(row[97+2])) + math.Exp(float64(row[98+2])) + math.Exp(float64(row[99+2])))
	assert.InDelta(t, float64(row[first.ID])-z, first.Constrained.Logprob, 1e-5)
	assert.InDelta(t, float64(row[first.ID]), first.Logprob, 1e-5, "raw logprob is the model's")
	var mass float64
	for _, alt := range first.Constrained.TopLogprobs {
		mass += math.Exp(alt.Logprob)
	}
	assert.InDelta(t, 1, mass, 1e-5, "the three allowed tokens carry all the constrained mass")
	assert.Equal(t, ".", c.Tokens[1].Token)
	assert.True(t, c.Tokens[1].Forced)
}

func TestConstrainedBranchesAndArithmetic(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), fixture.Arithmetic)
	cs, err := decode.CompleteN(context.Background(), b, "x", 4, decode.Options{MaxTokens: 30, Constraint: matcherOf(a), Sampling: decode.SamplingOptions{Temperature: 1.5, Seed: 1}})
	require.NoError(t, err, "the budget keeps room to finish every branch")
	for _, c := range cs {
		assert.True(t, fixture.IsArithmeticPrefix(c.Text), "%q", c.Text)
		m := a.NewMatcher()
		for _, tok := range c.Tokens {
			require.NoError(t, m.Advance(tok.ID))
		}
		assert.True(t, m.CanEnd(), "every output is complete: %q (%s)", c.Text, c.FinishReason)
	}
}

// countingConstraint counts FillMask calls of a matcher and its clones.
type countingConstraint struct {
	*automaton.Matcher
	calls *int
}

func (c countingConstraint) FillMask(mask []uint32) error {
	*c.calls++
	return c.Matcher.FillMask(mask)
}

func TestOneMaskPerState(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= "The " [a-z]+ " sat on the " [a-z]+ "."`)
	calls := 0
	c, err := decode.Complete(context.Background(), b, "x", decode.Options{MaxTokens: 40, Constraint: func() decode.Constraint { return countingConstraint{a.NewMatcher(), &calls} }, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 2}})
	require.NoError(t, err)
	// One mask per state the output passes through: before each token,
	// and once at the end (where only end-of-generation is left).
	assert.LessOrEqual(t, calls, len(c.Tokens)+1, "%d masks for %d tokens", calls, len(c.Tokens))
}

func TestChoiceList(t *testing.T) {
	_, b := newFake(t)
	v := b.Vocab()
	p, err := grammar.Compile(grammar.Choice("yes", "yesterday", "no", "n/a"))
	require.NoError(t, err)
	a, err := automaton.New(p, v, automaton.NewTrie(v))
	require.NoError(t, err)
	seen := map[string]bool{}
	for seed := range uint64(40) {
		c, err := decode.Complete(context.Background(), b, "The answer:", decode.Options{MaxTokens: 20, Constraint: matcherOf(a), Sampling: decode.SamplingOptions{Temperature: 1.5, Seed: seed}})
		require.NoError(t, err)
		require.Contains(t, []string{"yes", "yesterday", "no", "n/a"}, c.Text)
		seen[c.Text] = true
	}
	assert.GreaterOrEqual(t, len(seen), 3, "sampling reaches several choices: %v", seen)
}

// budgetOnly hides a matcher's Branches, so that generation fills every
// mask before it evaluates.
type budgetOnly struct{ m *automaton.Matcher }

func (c budgetOnly) FillMask(mask []uint32) error { return c.m.FillMask(mask) }
func (c budgetOnly) Advance(t int) error          { return c.m.Advance(t) }
func (c budgetOnly) CanEnd() bool                 { return c.m.CanEnd() }
func (c budgetOnly) TokensToEnd() int             { return c.m.TokensToEnd() }
func (c budgetOnly) Snapshot() int                { return c.m.Snapshot() }
func (c budgetOnly) Restore(mark int)             { c.m.Restore(mark) }
func (c budgetOnly) FillMaskWithin(mask []uint32, budget int) error {
	return c.m.FillMaskWithin(mask, budget)
}

// plainConstraint hides every method of a matcher but Constraint's, so
// that generation neither defers masks nor keeps a budget.
type plainConstraint struct{ m *automaton.Matcher }

func (c plainConstraint) FillMask(mask []uint32) error { return c.m.FillMask(mask) }
func (c plainConstraint) Advance(t int) error          { return c.m.Advance(t) }
func (c plainConstraint) CanEnd() bool                 { return c.m.CanEnd() }

// overlapConstraint records when each mask is filled.
type overlapConstraint struct {
	*automaton.Matcher
	log *spans
}

func (c overlapConstraint) FillMask(mask []uint32) error {
	start := time.Now()
	time.Sleep(time.Millisecond) // a mask that takes its time
	defer func() { c.log.add(&c.log.masks, start) }()
	return c.Matcher.FillMask(mask)
}

// spans are the time spans of masks and evaluations.
type spans struct {
	mu           sync.Mutex
	masks, evals [][2]time.Time
}

func (s *spans) add(to *[][2]time.Time, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*to = append(*to, [2]time.Time{start, time.Now()})
}

// during counts the masks whose span overlaps an evaluation's.
func (s *spans) during() int {
	n := 0
	for _, m := range s.masks {
		for _, e := range s.evals {
			if m[0].Before(e[1]) && e[0].Before(m[1]) {
				n++
				break
			}
		}
	}
	return n
}

// TestMasksWhileEvaluating: where no token is forced, the next mask is
// filled while the model evaluates, and the output is what filling it
// before would give.
func TestMasksWhileEvaluating(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= "The " [a-z]+ " sat on the " [a-z ]+ "."`)
	var log spans
	b.BeforeEval = func([]decode.EvalRequest) error {
		start := time.Now()
		time.Sleep(3 * time.Millisecond) // a model that takes its time
		log.add(&log.evals, start)
		return nil
	}
	opts := decode.Options{MaxTokens: 200, Sampling: decode.SamplingOptions{Temperature: 1, Seed: 4}, TopLogprobs: 2,
		Constraint: func() decode.Constraint { return overlapConstraint{a.NewMatcher(), &log} }}
	c, err := decode.Complete(context.Background(), b, "x", opts)
	require.NoError(t, err)
	free := 0
	for _, tok := range c.Tokens {
		if !tok.Forced {
			free++
		}
	}
	// A state where one byte comes next ("T" then "h") has its mask filled
	// before Eval, to see whether a token is forced; the others during.
	during := log.during()
	assert.GreaterOrEqual(t, 4*during, 3*free, "masks for free tokens are filled during Eval (%d of %d masks, %d free tokens)", during, len(log.masks), free)

	b.BeforeEval = nil
	opts.Constraint = func() decode.Constraint { return budgetOnly{a.NewMatcher()} }
	want, err := decode.Complete(context.Background(), b, "x", opts)
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, c.Tokens, "deferring the mask changes nothing")
}

// TestForcedTokensAtTheContextEnd: tokens forced ahead stand in the
// branch's ids before they are recorded; the context is full when the
// recorded tokens fill it, not when the forced ones are appended, so a
// constrained output that fits the context is finished whole, and one
// that does not is an UnfinishedError, never text that leaves the
// grammar.
func TestForcedTokensAtTheContextEnd(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= "xyz" ("a" | "b") "uvw."`)
	re := regexp.MustCompile(`^xyz[ab]uvw\.$`)
	prompt, err := b.Tokenize("The", true)
	require.NoError(t, err)
	for room := 1; room <= 12; room++ {
		b.ContextLen = len(prompt) + room
		for seed := range uint64(4) {
			c, err := decode.Complete(context.Background(), b, "The", decode.Options{
				MaxTokens: 40, Constraint: matcherOf(a),
				Sampling: decode.SamplingOptions{Temperature: 1, Seed: seed},
			})
			if err != nil {
				var unfinished *decode.UnfinishedError
				require.ErrorAs(t, err, &unfinished, "room %d seed %d", room, seed)
				if !strings.Contains(unfinished.Detail, "budget of") {
					assert.Contains(t, unfinished.Detail, "the context is full", "room %d seed %d", room, seed)
				}
				assert.True(t, strings.HasPrefix("xyzauvw.", unfinished.Completion.Text) || strings.HasPrefix("xyzbuvw.", unfinished.Completion.Text), "room %d seed %d: %q is a prefix of the language", room, seed, unfinished.Completion.Text)
				continue
			}
			assert.Regexp(t, re, c.Text, "room %d seed %d", room, seed)
			assert.LessOrEqual(t, len(prompt)+len(c.Tokens), b.ContextLen)
		}
	}
}

// TestHealedBudgetIsNamed: a budget too small for the output, with
// healed bytes, is refused before generation naming MaxTokens and the
// one free token the healed bytes take, not a budget the caller never
// gave; with one token more it is generated, the healed token free.
func TestHealedBudgetIsNamed(t *testing.T) {
	_, b := newFake(t)
	a := bindGBNF(t, b.Vocab(), `root ::= "xy" [a-z] [a-z] "."`)
	_, err := decode.Complete(context.Background(), b, "The", decode.Options{MaxTokens: 1, HealedBytes: 1, Constraint: matcherOf(a)})
	var unfinished *decode.UnfinishedError
	require.ErrorAs(t, err, &unfinished)
	assert.Contains(t, unfinished.Detail, "MaxTokens 1, with one free token for the 1 healed bytes, cannot hold the output")
	c, err := decode.Complete(context.Background(), b, "The", decode.Options{MaxTokens: 4, HealedBytes: 1, Constraint: matcherOf(a)})
	require.NoError(t, err)
	assert.Len(t, c.Tokens, 5, "x, y, two letters and the dot, one byte a token")
}
