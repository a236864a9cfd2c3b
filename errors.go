package reins

import (
	"errors"
	"fmt"

	"github.com/reins-go/reins/decode"
)

// Errors a program can act on. Besides these: a bad grammar or regular
// expression is a *grammar.Error (with its file, line and column), a
// schema reins cannot compile a *jsonschema.Error (with its JSON pointer
// and keyword), an option out of range an *OptionError.
var (
	// ErrUnfinished: a constrained output was cut (by the token budget,
	// the context window, a stop string or a cancellation) before it
	// was complete. The error is an *UnfinishedError holding the
	// partial output.
	ErrUnfinished = decode.ErrUnfinished
	// ErrTooManyBranches: more branches than a backend can run at once.
	// Model runs any number, in groups; decode.CompleteN returns it.
	ErrTooManyBranches = decode.ErrTooManyBranches
	// ErrClosed: the model was closed.
	ErrClosed = errors.New("reins: the model is closed")
)

// UnfinishedError is a constrained output cut before it was complete;
// see ErrUnfinished.
type UnfinishedError = decode.UnfinishedError

// OptionError is an option out of range, naming the field.
type OptionError = decode.OptionError

// InvalidOutputError is an output that its JSON schema rejects. The
// grammar keeps outputs inside the schema, so this happens only where
// JSONOptions.Relax dropped a keyword from the grammar (Relaxed names
// them), or through a bug in reins.
type InvalidOutputError struct {
	Constraint string
	Relaxed    []string
	Err        error // the validator's error
}

func (e *InvalidOutputError) Error() string {
	if len(e.Relaxed) > 0 {
		return fmt.Sprintf("the output fails the %s, whose keywords %v the grammar does not enforce (JSONOptions.Relax): %v", e.Constraint, e.Relaxed, e.Err)
	}
	return fmt.Sprintf("reins bug: the constrained output fails the %s: %v", e.Constraint, e.Err)
}

func (e *InvalidOutputError) Unwrap() error { return e.Err }
