package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/reins-go/reins/vocab"
)

// Bytes is a byte string that encodes in JSON as a list of numbers, as
// OpenAI's logprobs do ("bytes": [32, 116, 104, 101]), so that tokens
// which split a UTF-8 character are reported exactly.
type Bytes []byte

// MarshalJSON encodes b as a JSON array of numbers.
func (b Bytes) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+4*len(b))
	out = append(out, '[')
	for i, x := range b {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(x), 10)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON decodes a JSON array of numbers in [0, 255] (null is
// no bytes). Its errors quote the JSON at fault, since encoding/json
// does not say where a custom decoder failed.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	if d := bytes.TrimSpace(data); len(d) == 0 || d[0] != '[' && string(d) != "null" {
		return fmt.Errorf("bytes %.24s: want a JSON array of numbers from 0 to 255", d)
	}
	var xs []uint8
	if err := json.Unmarshal(data, &xs); err != nil {
		return fmt.Errorf("bytes %.24s: want a JSON array of numbers from 0 to 255 (%v)", data, err)
	}
	*b = xs
	return nil
}

// TopLogprob is one alternative at a position: a token the model could
// have produced there and its log-probability.
type TopLogprob struct {
	ID      int     `json:"id"`
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   Bytes   `json:"bytes"`
}

// Alternatives are the top alternatives at a position, most probable
// first. They encode in JSON as a list also when there are none, as
// OpenAI's top_logprobs do.
type Alternatives []TopLogprob

// MarshalJSON encodes a as a JSON list, [] when a is nil.
func (a Alternatives) MarshalJSON() ([]byte, error) {
	if a == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]TopLogprob(a))
}

// Logprobs is a token's log-probability and the top alternatives at its
// position, under one distribution.
type Logprobs struct {
	Logprob     float64      `json:"logprob"`
	TopLogprobs Alternatives `json:"top_logprobs"`
	// TopK is set when the distribution is known only through the
	// alternatives a TextBackend returned: the constrained one is then
	// renormalised over the allowed tokens among them, and Unseen says
	// how much probability, at most, lay outside them under the model.
	TopK   bool    `json:"top_k,omitempty"`
	Unseen float64 `json:"unseen,omitempty"`
}

// Token is one generated or scored token, in the shape of an entry of
// OpenAI's logprobs.content[] with reins' additions.
type Token struct {
	ID    int    `json:"id"`
	Token string `json:"token"` // the token's bytes as a string (may be invalid UTF-8 alone)
	Bytes Bytes  `json:"bytes"`
	// Logprob and TopLogprobs are under the model's own distribution.
	Logprob     float64      `json:"logprob"`
	TopLogprobs Alternatives `json:"top_logprobs"`
	// Constrained is the same under the constrained distribution (the
	// model's, masked to what the constraint allows and renormalised):
	// the distribution the token was sampled from. Near the end of the
	// token budget, a Budgeted constraint also masks the tokens after
	// which the output could no longer finish within it, so the
	// renormalisation is over fewer tokens there. It is nil when
	// generation has no constraint.
	Constrained *Logprobs `json:"constrained,omitempty"`
	// Forced is true for a token the constraint left as the only choice,
	// appended without sampling.
	Forced bool `json:"forced,omitempty"`
	// Unscored is true for text a TextBackend was never asked about: the
	// constraint forced it (Forced) after the server stopped or strayed,
	// or it is the allowed beginning of a token the constraint refused
	// where nothing whole was allowed (Constrained is then nil). Its ID is
	// -1 and its Logprob 0, not a measurement.
	Unscored bool `json:"unscored,omitempty"`
}

// Prob returns e^Logprob.
func (t Token) Prob() float64 { return math.Exp(t.Logprob) }

// topLogprobs builds the alternatives for ids under logprobs.
func topLogprobs(v *vocab.Vocab, logprobs []float32, ids []int) []TopLogprob {
	if len(ids) == 0 {
		return nil
	}
	out := make([]TopLogprob, len(ids))
	for i, id := range ids {
		out[i] = TopLogprob{ID: id, Logprob: float64(logprobs[id])}
		if id < v.Len() {
			b := v.Bytes(id)
			out[i].Token, out[i].Bytes = string(b), Bytes(b)
		}
	}
	return out
}
