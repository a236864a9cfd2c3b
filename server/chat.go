package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reins-go/reins/vocab"
)

// ChatFormat is how a conversation becomes a prompt: each message is
// its role's Start, its content, its role's End; the prompt ends with
// the assistant's Start, and the model writes the reply.
//
// reins does not run the Jinja templates that GGUF files carry
// (tokenizer.chat_template): ChatFormatFromTemplate recognises the
// common families by the markers they write and uses reins' own
// rendering of them (no tools, no images; a system message kept as the
// family writes it). A template reins does not recognise is refused
// rather than guessed; a model without one gets the plain format, a
// transcript ("System: ...", "User: ...", "Assistant:") for base models
// such as the built-in one, documented as such.
type ChatFormat struct {
	Name string
	// Start and End hold each role's text, indexed system, user,
	// assistant.
	Start, End [3]string
	// Special: the markers (<|im_start|> and the like) are special
	// tokens of the model. They are tokenized as those tokens, and a
	// message that contains one is refused: a user cannot forge a turn.
	Special bool
	// Stop ends the reply where the format would begin another turn
	// (for the plain format, "\nUser:"), besides the model's
	// end-of-generation tokens.
	Stop []string
}

// Chat format names.
const (
	ChatPlain  = "plain"
	ChatML     = "chatml"
	ChatLlama3 = "llama3"
	ChatGemma  = "gemma"
	ChatPhi3   = "phi3"
)

// KnownChatFormat returns the chat format of that name: plain, chatml,
// llama3, gemma or phi3.
func KnownChatFormat(name string) (*ChatFormat, error) {
	switch name {
	case ChatPlain:
		return &ChatFormat{Name: name, Start: [3]string{"System: ", "User: ", "Assistant:"}, End: [3]string{"\n", "\n", "\n"},
			Stop: []string{"\nUser:", "\nSystem:"}}, nil
	case ChatML:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n"},
			End:   [3]string{"<|im_end|>\n", "<|im_end|>\n", "<|im_end|>\n"}}, nil
	case ChatLlama3:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|start_header_id|>system<|end_header_id|>\n\n", "<|start_header_id|>user<|end_header_id|>\n\n", "<|start_header_id|>assistant<|end_header_id|>\n\n"},
			End:   [3]string{"<|eot_id|>", "<|eot_id|>", "<|eot_id|>"}}, nil
	case ChatGemma:
		// Gemma has no system turn: a system message is a user turn.
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<start_of_turn>user\n", "<start_of_turn>user\n", "<start_of_turn>model\n"},
			End:   [3]string{"<end_of_turn>\n", "<end_of_turn>\n", "<end_of_turn>\n"}}, nil
	case ChatPhi3:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|system|>\n", "<|user|>\n", "<|assistant|>\n"},
			End:   [3]string{"<|end|>\n", "<|end|>\n", "<|end|>\n"}}, nil
	}
	return nil, fmt.Errorf("unknown chat format %q (want plain, chatml, llama3, gemma or phi3)", name)
}

// ChatFormatFromTemplate recognises a model's chat template (the Jinja
// text of its GGUF tokenizer.chat_template) by the markers it writes:
// "" gives the plain format; a template reins does not know is an
// error.
func ChatFormatFromTemplate(tmpl string) (*ChatFormat, error) {
	switch {
	case strings.TrimSpace(tmpl) == "":
		return KnownChatFormat(ChatPlain)
	case strings.Contains(tmpl, "<|im_start|>"):
		return KnownChatFormat(ChatML)
	case strings.Contains(tmpl, "<|start_header_id|>"):
		return KnownChatFormat(ChatLlama3)
	case strings.Contains(tmpl, "<start_of_turn>"):
		return KnownChatFormat(ChatGemma)
	case strings.Contains(tmpl, "<|user|>") && strings.Contains(tmpl, "<|end|>"):
		return KnownChatFormat(ChatPhi3)
	}
	return nil, errors.New("the model's chat template is not one reins recognises (chatml, llama3, gemma, phi3): name a format (--chat-format) or use /v1/completions")
}

// markers returns the special-token texts of the format.
func (f *ChatFormat) markers() []string {
	if !f.Special {
		return nil
	}
	var out []string
	for _, s := range append(f.Start[:], f.End[:]...) {
		for i := 0; i < len(s); i++ {
			if s[i] != '<' {
				continue
			}
			if j := strings.IndexByte(s[i:], '>'); j > 0 {
				m := s[i : i+j+1]
				found := false
				for _, o := range out {
					found = found || o == m
				}
				if !found {
					out = append(out, m)
				}
				i += j
			}
		}
	}
	return out
}

// markerIDs finds each marker's special token in v; a marker the
// vocabulary lacks is an error: the model was not trained on the format.
func (f *ChatFormat) markerIDs(v *vocab.Vocab) (map[string]int, error) {
	ms := f.markers()
	if len(ms) == 0 {
		return nil, nil
	}
	ids := map[string]int{}
	for id := range v.Len() {
		if k := v.Kind(id); k == vocab.KindControl || k == vocab.KindUserDefined {
			ids[string(v.Bytes(id))] = id
		}
	}
	out := map[string]int{}
	for _, m := range ms {
		id, ok := ids[m]
		if !ok {
			return nil, fmt.Errorf("chat format %s: the model has no special token %q", f.Name, m)
		}
		out[m] = id
	}
	return out, nil
}

// message is one message of a chat request, its content as text.
type message struct {
	role    int
	content string
}

// render writes the conversation as a prompt. It refuses content that
// holds one of the format's markers (param names the message).
func (f *ChatFormat) render(msgs []message) (string, *apiError) {
	var b strings.Builder
	ms := f.markers()
	for i, m := range msgs {
		for _, mk := range ms {
			if strings.Contains(m.content, mk) {
				return "", badRequest(fmt.Sprintf("messages[%d].content", i), fmt.Sprintf("the content holds %q, a special token of the model's chat format", mk))
			}
		}
		b.WriteString(f.Start[m.role])
		b.WriteString(m.content)
		b.WriteString(f.End[m.role])
	}
	b.WriteString(f.Start[2])
	return b.String(), nil
}
