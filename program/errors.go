package program

import "fmt"

// ErrorKind says what kind of mistake an Error is.
type ErrorKind uint8

// Error kinds.
const (
	// KindSyntax: the template does not parse (an unclosed tag, a stray
	// character in a tag, an unmatched block).
	KindSyntax ErrorKind = iota + 1
	// KindArgument: a tag's argument is unknown, repeated, of the wrong
	// type or out of range; a gen with two constraints; a select with no
	// options or duplicate ones.
	KindArgument
	// KindName: an unknown name ({{x}} that is neither an input variable
	// nor an earlier capture), a capture name used twice, a list variable
	// that is not a list.
	KindName
	// KindFile: a grammar= or schema= file that is missing, outside the
	// template's folder, not a regular file or too large.
	KindFile
	// KindConstraint: a regex, grammar or schema that does not compile.
	KindConstraint
	// KindLimit: the program exceeds a documented bound.
	KindLimit
	// KindRun: filling a hole failed (the error wraps the cause, such as
	// a *reins.UnfinishedError).
	KindRun
)

var kindNames = [...]string{"", "syntax", "argument", "name", "file", "constraint", "limit", "run"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// Error is a mistake in a program, at a position in its template: it
// reads "file:line:col: message" and wraps its cause, if any (a
// *grammar.Error, a *jsonschema.Error, a *reins.UnfinishedError, ...).
type Error struct {
	Pos  Pos
	Kind ErrorKind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Pos, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func errorf(pos Pos, kind ErrorKind, format string, args ...any) *Error {
	return &Error{Pos: pos, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
