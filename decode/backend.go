package decode

import (
	"context"

	"github.com/reins-go/reins/vocab"
)

// Backend is a language model to generate with, the seam between reins
// and an inference engine. It is one of two kinds, which Capabilities
// tells apart:
//
//   - a LogitsBackend gives the full next-token logits for any token
//     sequence (llama.cpp in process): reins samples, masks exactly, and
//     reports exact distributions;
//   - a TextBackend is a server that continues text and returns each
//     token with at most a few alternatives (OpenAI-compatible APIs,
//     Ollama): reins keeps a constraint by checking the bytes it returns,
//     taking allowed alternatives, and asking again, and reports what it
//     can know of the distributions.
//
// Generate, Complete, CompleteN and Score take either.
type Backend interface {
	Capabilities() Capabilities
}

// Capabilities describes a backend.
type Capabilities struct {
	// Logits: the backend is a LogitsBackend.
	Logits bool `json:"logits"`
	// TopLogprobs is the most alternatives per token a TextBackend
	// returns (OpenAI allows 20).
	TopLogprobs int `json:"top_logprobs"`
	// Bias: a TextBackend takes per-token biases (TextRequest.Bias) and
	// reports token ids.
	Bias bool `json:"bias"`
	// Echo: a TextBackend scores a text it is given (PromptScorer).
	Echo bool `json:"echo"`
	// Chat: the server applies the model's chat template to a
	// conversation; Raw: it continues raw text as given.
	Chat bool `json:"chat"`
	Raw  bool `json:"raw"`
	// JSONSchema: a TextBackend keeps an output to a JSON Schema itself
	// when asked (TextRequest.JSONSchema).
	JSONSchema bool `json:"json_schema,omitempty"`
	// Stream: a TextBackend passes tokens to TextRequest.Watch as they
	// come, and a request that Watch stops costs only the tokens before.
	Stream bool `json:"stream,omitempty"`
}

// LogitsBackend evaluates a model and returns next-token logits: tokens
// go in, logits come out.
//
// A backend keeps up to MaxSequences independent sequences (slots) and
// may cache their state between calls: a request whose tokens extend, or
// share a prefix with, what a slot already holds need only evaluate the
// new tokens. Which slot holds what is the backend's business; callers
// only name the slot and give its whole token sequence each time.
//
// A LogitsBackend is not safe for concurrent use.
type LogitsBackend interface {
	Backend
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
