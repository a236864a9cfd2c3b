package llama

import "github.com/reins-go/reins/decode"

var _ decode.LogitsBackend = (*Model)(nil)

// Capabilities says a Model gives full next-token logits.
func (m *Model) Capabilities() decode.Capabilities { return decode.Capabilities{Logits: true} }
