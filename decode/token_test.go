package decode

import (
	"encoding/json"
	"testing"
)

// TestTokenJSON: a token is written in OpenAI's logprobs.content[] shape:
// bytes as numbers, top_logprobs a list even when empty (under the
// model and under the constraint), constrained left out when there is
// no constraint.
func TestTokenJSON(t *testing.T) {
	for _, c := range []struct {
		tok  Token
		want string
	}{
		{Token{ID: 7, Token: "a", Bytes: Bytes("a"), Logprob: -0.5},
			`{"id":7,"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[]}`},
		{Token{ID: 7, Token: "a", Bytes: Bytes("a"), Logprob: -0.5, Constrained: &Logprobs{Logprob: 0}, Forced: true},
			`{"id":7,"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[],"constrained":{"logprob":0,"top_logprobs":[]},"forced":true}`},
		{Token{ID: 7, Token: "a", Bytes: Bytes("a"), Logprob: -0.5, TopLogprobs: []TopLogprob{{ID: 8, Token: "b", Bytes: Bytes("b"), Logprob: -1}}},
			`{"id":7,"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[{"id":8,"token":"b","logprob":-1,"bytes":[98]}]}`},
	} {
		got, err := json.Marshal(c.tok)
		if err != nil || string(got) != c.want {
			t.Errorf("json.Marshal = %s, %v\nwant %s", got, err, c.want)
		}
		var back Token
		if err := json.Unmarshal(got, &back); err != nil || back.ID != c.tok.ID || string(back.Bytes) != string(c.tok.Bytes) {
			t.Errorf("round trip of %s: %+v, %v", got, back, err)
		}
	}
}

// TestTokenEmbedded: a Token or Logprobs embedded in a caller's struct
// encodes as its fields beside the caller's own (no method of theirs is
// promoted to take the whole struct over).
func TestTokenEmbedded(t *testing.T) {
	type annotated struct {
		Token
		Note string `json:"note"`
	}
	got, err := json.Marshal(annotated{Token: Token{ID: 7, Token: "a", Bytes: Bytes("a")}, Note: "kept"})
	want := `{"id":7,"token":"a","bytes":[97],"logprob":0,"top_logprobs":[],"note":"kept"}`
	if err != nil || string(got) != want {
		t.Errorf("json.Marshal = %s, %v\nwant %s", got, err, want)
	}
	type scored struct {
		Logprobs
		Step int `json:"step"`
	}
	got, err = json.Marshal(scored{Step: 3})
	want = `{"logprob":0,"top_logprobs":[],"step":3}`
	if err != nil || string(got) != want {
		t.Errorf("json.Marshal = %s, %v\nwant %s", got, err, want)
	}
}
