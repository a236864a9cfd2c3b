package reins

import (
	"context"

	"github.com/reins-go/reins/decode"
)

// ScoreOptions configures Score: a Context that conditions the text
// without being scored, and how many alternatives each token reports.
type ScoreOptions = decode.ScoreOptions

// ScoreResult is every token of a scored text with its log-probability,
// their sum and mean.
type ScoreResult = decode.ScoreResult

// Score returns the log-probability of every token of text under the
// model, each given everything before it: the first conditioned on BOS,
// or on opts.Context. With a context, exactly the bytes of text are
// scored, as the tokens a generation after the context would produce
// for them.
//
// On a server it asks the server to score the text (Capabilities().Echo);
// one that cannot gives decode.ErrCannotScore.
func (m *Model) Score(ctx context.Context, text string, opts ScoreOptions) (*ScoreResult, error) {
	leave, err := m.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if m.text != nil {
		return decode.Score(ctx, m.text, text, opts)
	}
	l, err := m.lease(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer l.release()
	return decode.Score(ctx, l, text, opts)
}
