package decode

// Constraint decides, at every step of one sequence's generation, which
// tokens may come next. automaton.Matcher implements it (and Budgeted);
// a caller may bring its own. A Constraint holds one sequence's state
// and is not safe for concurrent use.
type Constraint interface {
	// FillMask sets in mask (one bit per logit: bit t%32 of word t/32)
	// exactly the tokens that may come next, end-of-generation tokens
	// included when the output may end here, and clears every other bit.
	FillMask(mask []uint32) error
	// Advance commits token t. A token the mask refuses is an error, and
	// the constraint stays as it was.
	Advance(t int) error
	// CanEnd reports whether the output so far is complete.
	CanEnd() bool
}

// Budgeted is a Constraint that knows how few tokens can finish the
// output, so that generation under a token budget (MaxTokens, or what is
// left of the context) keeps room to finish: when the budget gets close,
// only tokens that still leave room are allowed, and an output comes back
// complete whenever the budget allows one at all.
type Budgeted interface {
	Constraint
	// TokensToEnd returns a number of tokens that is enough to finish the
	// output from here (0 when it may end now): the length of a way to
	// finish, not a guess.
	TokensToEnd() int
	// FillMaskWithin is FillMask keeping only the tokens after which the
	// output can still finish in budget-1 more tokens (by TokensToEnd).
	FillMaskWithin(mask []uint32, budget int) error
	// Snapshot returns a mark for Restore.
	Snapshot() int
	// Restore undoes the tokens advanced since Snapshot returned mark
	// (at least one token back is always possible).
	Restore(mark int)
}

// Branching is a Constraint that can tell, more cheaply than a mask, that
// at least two tokens may come next, so that none is forced: generation
// then fills the next mask while the model evaluates, not before.
type Branching interface {
	Constraint
	// Branches reports that at least two tokens may come next; false
	// when it cannot tell.
	Branches() bool
}

// budgetWindow is how close, in tokens, the budget must come to
// TokensToEnd before every allowed token is checked against it (the
// constrained distribution is then over exactly the tokens that leave
// room to finish). Further off, only a token that would need more than
// budgetWindow extra tokens to finish can break the budget; the sampler's
// pick is checked, and a pick that leaves no room is dropped from the
// distribution and the draw repeated.
const budgetWindow = 8

// maskWords returns how many uint32 words a mask over n logits takes.
func maskWords(n int) int { return (n + 31) / 32 }
