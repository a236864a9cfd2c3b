package earley

import (
	"errors"
	"fmt"
	"math"
)

// DefaultStepBudget is the work budget of one parser step unless
// SetStepBudget sets another. A step's work is the call items its
// completions scan; the items it adds are bounded by that plus the
// program's size. The grammars of llama.cpp's examples and those
// lowered from the JSON schemas of MaskBench scan at most a few hundred
// per byte of their test inputs, so the budget is thousands of times
// what they need; an ambiguous grammar (x ::= x x | "a" | "") scans
// about n²/2 at byte n, and reaches it near byte 1,400, after about
// ten milliseconds per byte.
const DefaultStepBudget = 1 << 20

// ErrWorkBudget is what a *BudgetError is, for errors.Is.
var ErrWorkBudget = errors.New("earley: work budget exceeded")

// BudgetError is a parse that went over its work budget: one step
// (Parser.SetStepBudget), or a whole check (CheckOptions). It is not a
// verdict on the input: the grammar is too ambiguous for the parser to
// decide within the budget.
type BudgetError struct {
	Step   int   // the step (Parser.Len) whose set went over
	Work   int64 // the work counted when it stopped
	Budget int64 // the budget it passed
	Whole  bool  // the whole check's budget, not one step's
	// Where a check stopped: the byte offset and the line and column (in
	// characters) of the byte that went over; Line is 0 outside Check.
	Offset    int64
	Line, Col int
}

func (e *BudgetError) Error() string {
	what := fmt.Sprintf("one step of the parse took more than %d units of work", e.Budget)
	if e.Whole {
		what = fmt.Sprintf("the parse took more than %d units of work", e.Budget)
	}
	msg := what + ", its budget: the grammar is too ambiguous to parse this input in reasonable time"
	if e.Line > 0 {
		return fmt.Sprintf("byte %d (line %d, column %d): %s", e.Offset, e.Line, e.Col, msg)
	}
	return fmt.Sprintf("step %d: %s", e.Step, msg)
}

// Is reports whether target is ErrWorkBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrWorkBudget }

// StateError is a check whose live parse state passed its memory bound
// (CheckOptions.MaxStateBytes): the text holds more open rules (nests
// more deeply) than the check follows. Like a *BudgetError, it is not a
// verdict; errors.Is(err, ErrWorkBudget) holds.
type StateError struct {
	Limit     int64 // the bound, in bytes
	Offset    int64 // the bytes read when it stopped
	Line, Col int
}

func (e *StateError) Error() string {
	return fmt.Sprintf("byte %d (line %d, column %d): the parse's live state passed %d bytes (CheckOptions.MaxStateBytes): the text nests more deeply than the check follows", e.Offset, e.Line, e.Col, e.Limit)
}

// Is reports whether target is ErrWorkBudget.
func (e *StateError) Is(target error) bool { return target == ErrWorkBudget }

// SetStepBudget sets the work budget of each step (see
// DefaultStepBudget); n ≤ 0 removes it.
func (ps *Parser) SetStepBudget(n int) {
	if n <= 0 {
		n = math.MaxInt
	}
	ps.budget = n
}

// SetWorkLimit makes Push and AdvanceToken fail with a *BudgetError
// (Whole) once Work would pass limit, so that a caller can bound a
// whole job: a check, or a mask (set it to Work() plus the job's budget
// before, and back to 0 after). 0 or less removes it.
func (ps *Parser) SetWorkLimit(limit int64) {
	if limit <= 0 {
		limit = math.MaxInt64
	}
	ps.limit = limit
}

// Err returns nil, or why the parser stopped: a *BudgetError (ErrWorkBudget)
// when a step went over the work budget. The step is abandoned, as a
// refused byte is, but the error stays: from then on Push and
// AdvanceToken refuse everything, so that a walk over many bytes stops
// at once, and the caller must not read a refusal as a verdict. Reset
// clears it; Pop and Truncate work as before.
func (ps *Parser) Err() error { return ps.err }

// Work returns the work of the steps taken since Reset (those undone
// included): the items of their sets and the call items their
// completions scanned.
func (ps *Parser) Work() int64 { return ps.total }

// overBudget fails the set being built, whose work passed the step
// budget. It is kept out of close, the hot path.
//
//go:noinline
func (ps *Parser) overBudget() {
	ps.err = &BudgetError{Step: int(ps.buildAt), Work: int64(ps.budget) - int64(ps.left), Budget: int64(ps.budget)}
}

// overLimit fails the set just built (from start), which took the work
// past the limit.
//
//go:noinline
func (ps *Parser) overLimit(start uint32) {
	ps.total -= int64(ps.budget-ps.left) + int64(uint32(len(ps.items))-start)
	ps.err = &BudgetError{Step: int(ps.buildAt), Work: ps.total, Budget: ps.limit, Whole: true}
}
