package decode

import (
	"context"

	"github.com/reins-go/reins/vocab"
)

// Backend evaluates a language model. It is the seam between reins and an
// inference engine: tokens go in, next-token logits come out.
//
// A backend keeps up to MaxSequences independent sequences (slots) and
// may cache their state between calls: a request whose tokens extend, or
// share a prefix with, what a slot already holds need only evaluate the
// new tokens. Which slot holds what is the backend's business; callers
// only name the slot and give its whole token sequence each time.
//
// A Backend is not safe for concurrent use.
type Backend interface {
	// Vocab returns the model's vocabulary.
	Vocab() *vocab.Vocab
	// NumLogits returns the length of a logit vector. It may exceed
	// Vocab().Len() (padded output layers); the extra logits are for no
	// token.
	NumLogits() int
	// ContextSize returns the most tokens a sequence may hold.
	ContextSize() int
	// MaxSequences returns how many slots Eval accepts (Seq in
	// [0, MaxSequences)).
	MaxSequences() int
	// Tokenize turns text into tokens. With addSpecial it adds what the
	// model puts around a prompt (BOS for most models).
	Tokenize(text string, addSpecial bool) ([]int, error)
	// Eval evaluates every request and fills its Logits. Requests must
	// name different slots.
	Eval(ctx context.Context, reqs []EvalRequest) error
}

// EvalRequest asks for the logits after the last Want tokens of a
// sequence.
type EvalRequest struct {
	Seq    int   // the slot, in [0, MaxSequences)
	Tokens []int // the whole sequence, not only what is new
	// Want is how many trailing positions need logits, at least 1.
	// Row i of Logits holds the logits that follow
	// Tokens[len(Tokens)-Want+i].
	Want int
	// Logits receives Want rows of NumLogits values each; it must have
	// room for them.
	Logits []float32
}
