package earley

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/reins-go/reins/grammar"
)

// The default budget of a whole check (see CheckOptions): after n bytes,
// at most DefaultCheckBase + n×DefaultCheckPerByte units of work. JSON
// under json.gbnf takes about 9 a byte; the MaskBench schemas' grammars
// at most about 700 a byte on their (short) test instances, most of it
// in their first set. An ambiguous grammar takes about n³/6 after n
// bytes, and so stops near byte 500 (x ::= x x | "a" | "").
const (
	DefaultCheckBase    = 1 << 24
	DefaultCheckPerByte = 1 << 10
)

// DefaultCheckState bounds the memory of a check's live parse state
// (see CheckOptions.MaxStateBytes). It follows the rules still open: 50
// MB of flat JSON under json.gbnf runs in about 22 MB, but each level of
// nesting keeps about 60 bytes, so about 4.5 million nested arrays reach
// it (the process then holds about twice the bound).
const DefaultCheckState = 256 << 20

// CheckOptions bound the work of a check; the zero value gives the
// defaults.
type CheckOptions struct {
	// StepBudget bounds the work of one step (Parser.SetStepBudget): 0
	// is DefaultStepBudget, negative no bound.
	StepBudget int
	// WorkBase and WorkPerByte bound the work of the whole check: after
	// n bytes, WorkBase + n×WorkPerByte. 0 is the default, negative no
	// bound (each separately).
	WorkBase, WorkPerByte int64
	// MaxStateBytes bounds the memory of the live parse state: past it
	// the check stops with a *StateError (errors.Is ErrWorkBudget: no
	// verdict). 0 is DefaultCheckState, negative no bound.
	MaxStateBytes int64
}

// RejectError is input that the grammar's language does not hold: a
// byte that no sentence can have there, or an end where a sentence
// cannot end.
type RejectError struct {
	Offset    int64  // of the refused byte; at the end, the input's length
	Line, Col int    // of the character it is in; 1-based, Col in characters
	Got       string // what was refused: a character ('é') or a byte (\xff); "" at the end
	EOF       bool   // the input ended before a sentence did
	Expected  string // what could have come instead (Parser.Expected)
}

func (e *RejectError) Error() string {
	if e.EOF {
		return fmt.Sprintf("byte %d (line %d, column %d): the text ends too early; expected %s", e.Offset, e.Line, e.Col, e.Expected)
	}
	return fmt.Sprintf("byte %d (line %d, column %d): %s is not allowed; expected %s", e.Offset, e.Line, e.Col, e.Got, e.Expected)
}

// Checker decides whether a stream of bytes, written to it piece by
// piece, is a sentence of a Prog's language. It commits every few
// steps, so its memory follows the parse's live state (the rules still
// open, as the nesting of a JSON document) rather than the input's
// length. It is not safe for concurrent use.
type Checker struct {
	ps            *Parser
	off           int64
	line, col     int
	partial       []byte // the bytes of the character begun, if it is not finished
	base, perByte int64  // of the work budget; < 0 none
	maxState      int64  // of the live state's memory; < 0 none
	err           error  // the first error, returned again
}

// checkCommitEvery is how many steps a Checker keeps before it commits
// them: few, so that its memory holds few whole sets, and more than one,
// to share the cost of committing.
const checkCommitEvery = 16

// NewChecker returns a checker at the start of p's language.
func NewChecker(p *grammar.Prog, opts CheckOptions) *Checker {
	c := &Checker{ps: NewParser(p), line: 1, col: 1, base: opts.WorkBase, perByte: opts.WorkPerByte, maxState: opts.MaxStateBytes}
	if c.maxState == 0 {
		c.maxState = DefaultCheckState
	}
	switch {
	case opts.StepBudget > 0:
		c.ps.SetStepBudget(opts.StepBudget)
	case opts.StepBudget < 0:
		c.ps.SetStepBudget(0)
	}
	if c.base == 0 {
		c.base = DefaultCheckBase
	}
	if c.perByte == 0 {
		c.perByte = DefaultCheckPerByte
	}
	if err := c.ps.Err(); err != nil { // the first set alone went over
		c.err = c.budgetError(err)
	}
	return c
}

// Write checks the bytes of p, which follow those written before. It
// returns how many it accepted and, at the first byte refused, a
// *RejectError; a *BudgetError (ErrWorkBudget) when the parse went over
// its budget. After an error, Write returns it again.
func (c *Checker) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	ps := c.ps
	for i, b := range p {
		if c.base >= 0 && c.perByte >= 0 {
			ps.SetWorkLimit(satAdd64(c.base, satMul64(c.perByte, c.off+1)))
		}
		if !ps.Push(b) {
			if err := ps.Err(); err != nil {
				c.err = c.budgetError(err)
			} else {
				c.err = c.reject(b, p[i+1:])
			}
			return i, c.err
		}
		c.advance(b)
		if ps.Len()-ps.Base() >= checkCommitEvery {
			ps.Commit()
			if c.maxState >= 0 && int64(ps.StateBytes()) > c.maxState {
				c.err = &StateError{Limit: c.maxState, Offset: c.off, Line: c.line, Col: c.col}
				return i + 1, c.err
			}
		}
	}
	return len(p), nil
}

// Close ends the input. It returns nil when the input written is a
// sentence of the language, a *RejectError (EOF) when it ends too
// early, or the error Write returned.
func (c *Checker) Close() error {
	if c.err != nil {
		return c.err
	}
	if !c.ps.CanEnd() {
		c.err = &RejectError{Offset: c.off, Line: c.line, Col: c.col - min(len(c.partial), 1), EOF: true, Expected: c.ps.expected(c.partial)}
	}
	return c.err
}

// Check reads r to its end and reports whether what it read is a
// sentence of p's language: nil if so, a *RejectError with the offset,
// line and column of the first byte no sentence can have (or of the
// end), a *BudgetError past the work budget, or the error of reading r
// (wrapped). Its memory is bounded by the parse's live state, not by
// the input's length.
func Check(p *grammar.Prog, r io.Reader, opts CheckOptions) error {
	c := NewChecker(p, opts)
	if _, err := io.Copy(c, r); err != nil {
		if c.err != nil {
			return c.err
		}
		return fmt.Errorf("earley: reading the input: %w", err)
	}
	return c.Close()
}

// advance moves the position past accepted byte b.
func (c *Checker) advance(b byte) {
	c.off++
	switch {
	case b == '\n':
		c.line, c.col = c.line+1, 1
		c.partial = c.partial[:0]
	case b < 0x80 || b >= 0xC0: // count characters, not continuation bytes
		c.col++
		c.partial = c.partial[:0]
		if utf8Len(b) > 1 {
			c.partial = append(c.partial, b)
		}
	case len(c.partial) > 0:
		if c.partial = append(c.partial, b); len(c.partial) == utf8Len(c.partial[0]) {
			c.partial = c.partial[:0]
		}
	}
}

// reject describes refused byte b, followed by rest.
func (c *Checker) reject(b byte, rest []byte) *RejectError {
	e := &RejectError{Offset: c.off, Line: c.line, Col: c.col, Expected: c.ps.expected(c.partial)}
	char := append(append([]byte(nil), c.partial...), b)
	if len(c.partial) > 0 {
		e.Col--
	}
	if n := utf8Len(char[0]); len(char) < n {
		char = append(char, rest[:min(len(rest), n-len(char))]...)
	}
	switch r, size := utf8.DecodeRune(char); {
	case size > 1:
		e.Got = strconv.QuoteRune(r)
	case b < utf8.RuneSelf:
		e.Got = strconv.QuoteRune(rune(b))
	default:
		e.Got = fmt.Sprintf(`\x%02x`, b)
	}
	return e
}

// budgetError places a parser's *BudgetError at the current byte.
func (c *Checker) budgetError(err error) error {
	if be, ok := err.(*BudgetError); ok {
		e := *be
		e.Offset, e.Line, e.Col = c.off, c.line, c.col
		return &e
	}
	return err
}

func satAdd64(a, b int64) int64 {
	if a > 1<<62 || b > 1<<62 {
		return 1 << 62
	}
	return min(a+b, 1<<62)
}

func satMul64(a, b int64) int64 {
	if a != 0 && b > (1<<62)/a {
		return 1 << 62
	}
	return a * b
}
