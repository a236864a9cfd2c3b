package decode

import (
	"errors"
	"fmt"
)

// OptionError is an option out of range. Field names the field of the
// options struct (MaxTokens, TopLogprobs, Temperature, ...).
type OptionError struct {
	Field string // the field, as spelled in Go
	Value string // the value given
	Want  string // what would have been accepted
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Want)
}

// ErrUnfinished is the sentinel of an UnfinishedError: errors.Is(err,
// ErrUnfinished) tells that a constrained output was cut before the
// constraint was satisfied.
var ErrUnfinished = errors.New("the output is unfinished")

// ErrTooManyBranches is returned when more branches are asked for than
// the backend keeps sequences (Backend.MaxSequences).
var ErrTooManyBranches = errors.New("more branches than the backend has sequences")

// UnfinishedError reports a constrained generation that ended before its
// output was complete: the token budget or the context ran out, the
// context.Context was cancelled, or a stop string cut the output. The
// partial output is in Completion, for a caller who wants it anyway; it
// is never in the constraint's language.
type UnfinishedError struct {
	// Branch is the index of the completion, for CompleteN.
	Branch int
	// Reason is why generation ended: FinishLength, FinishCancelled or
	// FinishStop.
	Reason string
	// Detail says what ran out, for the message.
	Detail string
	// Completion is the partial output.
	Completion *Completion
	// Cause is the context's error after a cancellation.
	Cause error
}

func (e *UnfinishedError) Error() string {
	msg := "the output is unfinished"
	if e.Branch > 0 {
		msg = fmt.Sprintf("completion %d is unfinished", e.Branch)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is reports whether target is ErrUnfinished.
func (e *UnfinishedError) Is(target error) bool { return target == ErrUnfinished }

// Unwrap returns the context's error after a cancellation.
func (e *UnfinishedError) Unwrap() error { return e.Cause }
