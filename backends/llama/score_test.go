package llama

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins"
	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/shared"
)

// TestScoreWithContextIsExact scores texts after a context through the
// front door on stories260K, whose SentencePiece tokenizer puts a space
// before a text tokenized alone: the scored tokens must spell exactly
// the text (" happy", not "  happy"), also where the boundary falls
// inside a word, and their sum must be ScoreTokens' for the same tokens.
func TestScoreWithContextIsExact(t *testing.T) {
	lm := load(t, shared.Path(t, "models/stories260K.gguf"), Options{ContextSize: 256})
	m := reins.New(lm)
	ctx := context.Background()
	pairs := []struct{ context, text string }{
		{"Lily said", " happy"},
		{"Once upon a time", " there was a little girl."},
		{"Once upon a ti", "me there was"}, // inside "time"
		{"The little gir", "l"},            // inside "girl", one letter
		{"She was ve", "ry happy. "},       // inside "very", trailing space
		{"Tom and", "  two spaces"},        // two spaces: both scored
		{"He saw a", " big, red ball!\nThe end."},
	}
	for _, p := range pairs {
		t.Run(p.context+"|"+p.text, func(t *testing.T) {
			res, err := m.Score(ctx, p.text, reins.ScoreOptions{Context: p.context})
			require.NoError(t, err)
			var spelled []byte
			ids := make([]int, len(res.Tokens))
			sum := 0.0
			for i, tok := range res.Tokens {
				spelled = append(spelled, tok.Bytes...)
				ids[i] = tok.ID
				sum += tok.Logprob
			}
			assert.Equal(t, p.text, string(spelled), "the scored tokens spell the text exactly")
			assert.InDelta(t, sum, res.Sum, 1e-9)
			want, err := decode.ScoreTokens(ctx, lm, res.Unscored, ids, 0)
			require.NoError(t, err)
			assert.InDelta(t, want.Sum, res.Sum, 1e-5, "the same as ScoreTokens of the same tokens")
			// The unscored prefix is the context as a prompt: BOS and its tokens.
			prompt, err := lm.Tokenize(p.context, true)
			require.NoError(t, err)
			assert.Equal(t, prompt, res.Unscored)
		})
	}
}
