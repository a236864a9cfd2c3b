// Package chat writes conversations as a model's prompt, in the format
// of its chat template.
//
// reins does not run the Jinja templates that GGUF files carry
// (tokenizer.chat_template): FromTemplate recognises the common families
// by the markers they write (ChatML, Llama 3, Gemma, Phi-3) and uses
// reins' own rendering of them (no tools, no images). A template reins
// does not recognise is refused rather than guessed; a model without one
// gets the plain format, a transcript ("System: ...", "User: ...",
// "Assistant:") for base models such as the built-in one.
//
// Formats whose markers are special tokens (<|im_start|> and the like)
// need a backend that tokenizes them as those tokens: llama.cpp reads
// them in a prompt as plain characters, so that a prompt cannot smuggle
// one in. SpecialTokens wraps a backend so that it does, for the markers
// a caller names; Render refuses a message that holds one, so that a
// user cannot forge a turn.
package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/vocab"
)

// Roles, the indices of Format.Start and Format.End.
const (
	System = iota
	User
	Assistant
)

// RoleNames are the roles' names, by index.
var RoleNames = [...]string{"system", "user", "assistant"}

// Role returns the index of a role's name, or -1.
func Role(name string) int { return slices.Index(RoleNames[:], name) }

// Format is how a conversation becomes a prompt: each message is its
// role's Start, its content, its role's End; a reply begins with the
// assistant's Start.
type Format struct {
	Name string
	// Start and End hold each role's text, indexed System, User,
	// Assistant.
	Start, End [3]string
	// Special: the markers are special tokens of the model.
	Special bool
	// Stop ends a reply where the format would begin another turn (for
	// the plain format, "\nUser:"), besides the model's end-of-generation
	// tokens.
	Stop []string
}

// Format names.
const (
	Plain  = "plain"
	ChatML = "chatml"
	Llama3 = "llama3"
	Gemma  = "gemma"
	Phi3   = "phi3"
)

// Known returns the format of that name: plain, chatml, llama3, gemma or
// phi3.
func Known(name string) (*Format, error) {
	switch name {
	case Plain:
		return &Format{Name: name, Start: [3]string{"System: ", "User: ", "Assistant: "}, End: [3]string{"\n", "\n", "\n"},
			Stop: []string{"\nUser:", "\nSystem:"}}, nil
	case ChatML:
		return &Format{Name: name, Special: true,
			Start: [3]string{"<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n"},
			End:   [3]string{"<|im_end|>\n", "<|im_end|>\n", "<|im_end|>\n"}}, nil
	case Llama3:
		return &Format{Name: name, Special: true,
			Start: [3]string{"<|start_header_id|>system<|end_header_id|>\n\n", "<|start_header_id|>user<|end_header_id|>\n\n", "<|start_header_id|>assistant<|end_header_id|>\n\n"},
			End:   [3]string{"<|eot_id|>", "<|eot_id|>", "<|eot_id|>"}}, nil
	case Gemma:
		// Gemma has no system turn: a system message is a user turn.
		return &Format{Name: name, Special: true,
			Start: [3]string{"<start_of_turn>user\n", "<start_of_turn>user\n", "<start_of_turn>model\n"},
			End:   [3]string{"<end_of_turn>\n", "<end_of_turn>\n", "<end_of_turn>\n"}}, nil
	case Phi3:
		return &Format{Name: name, Special: true,
			Start: [3]string{"<|system|>\n", "<|user|>\n", "<|assistant|>\n"},
			End:   [3]string{"<|end|>\n", "<|end|>\n", "<|end|>\n"}}, nil
	}
	return nil, fmt.Errorf("chat: unknown format %q (want plain, chatml, llama3, gemma or phi3)", name)
}

// ErrUnknownTemplate is a chat template reins does not recognise: name a
// format instead.
var ErrUnknownTemplate = errors.New("chat: the model's chat template is not one reins recognises (chatml, llama3, gemma, phi3): name a format")

// FromTemplate recognises a model's chat template (the Jinja text of its
// GGUF tokenizer.chat_template) by the markers it writes: "" gives the
// plain format; a template reins does not know is ErrUnknownTemplate.
func FromTemplate(tmpl string) (*Format, error) {
	switch {
	case strings.TrimSpace(tmpl) == "":
		return Known(Plain)
	case strings.Contains(tmpl, "<|im_start|>"):
		return Known(ChatML)
	case strings.Contains(tmpl, "<|start_header_id|>"):
		return Known(Llama3)
	case strings.Contains(tmpl, "<start_of_turn>"):
		return Known(Gemma)
	case strings.Contains(tmpl, "<|user|>") && strings.Contains(tmpl, "<|end|>"):
		return Known(Phi3)
	}
	return nil, ErrUnknownTemplate
}

// ForFile returns the format of the GGUF model file at path, from its
// tokenizer.chat_template.
func ForFile(path string) (*Format, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chat: read the model's chat template: %w", err)
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	return FromTemplate(tmpl)
}

// For returns the format of backend b: its model file's (b has a Path
// method, as backends/llama's models do), else the plain format.
func For(b decode.Backend) (*Format, error) {
	if p, ok := b.(interface{ Path() string }); ok && p.Path() != "" {
		return ForFile(p.Path())
	}
	return Known(Plain)
}

// Markers returns the special-token texts of the format (none for a
// format whose markers are plain text).
func (f *Format) Markers() []string {
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
				if m := s[i : i+j+1]; !slices.Contains(out, m) {
					out = append(out, m)
				}
				i += j
			}
		}
	}
	return out
}

// MarkerIDs finds each marker's special token in v; a marker the
// vocabulary lacks is an error: the model was not trained on the format.
func (f *Format) MarkerIDs(v *vocab.Vocab) (map[string]int, error) {
	ms := f.Markers()
	if len(ms) == 0 {
		return nil, nil
	}
	ids := specialIDs(v)
	out := map[string]int{}
	for _, m := range ms {
		id, ok := ids[m]
		if !ok {
			return nil, fmt.Errorf("chat: format %s: the model has no special token %q", f.Name, m)
		}
		out[m] = id
	}
	return out, nil
}

// specialIDs maps the text of v's control and user-defined tokens to
// their ids.
func specialIDs(v *vocab.Vocab) map[string]int {
	ids := map[string]int{}
	for id := range v.Len() {
		if k := v.Kind(id); k == vocab.KindControl || k == vocab.KindUserDefined {
			if _, dup := ids[string(v.Bytes(id))]; !dup {
				ids[string(v.Bytes(id))] = id
			}
		}
	}
	return ids
}

// Message is one message of a conversation.
type Message struct {
	Role    int // System, User or Assistant
	Content string
}

// MarkerError is a message that holds one of the format's markers.
type MarkerError struct {
	Message int    // its index
	Marker  string // the marker it holds
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("chat: message %d holds %q, a special token of the model's chat format", e.Message, e.Marker)
}

// Render writes the conversation as a prompt that ends where the
// assistant's reply begins. A message that holds one of the format's
// markers is a *MarkerError.
func (f *Format) Render(msgs []Message) (string, error) {
	var b strings.Builder
	ms := f.Markers()
	for i, m := range msgs {
		if m.Role < System || m.Role > Assistant {
			return "", fmt.Errorf("chat: message %d has role %d", i, m.Role)
		}
		for _, mk := range ms {
			if strings.Contains(m.Content, mk) {
				return "", &MarkerError{Message: i, Marker: mk}
			}
		}
		b.WriteString(f.Start[m.Role])
		b.WriteString(m.Content)
		b.WriteString(f.End[m.Role])
	}
	b.WriteString(f.Start[Assistant])
	return b.String(), nil
}

// SpecialTokens returns a backend over b whose Tokenize turns the given
// marker texts (a format's Markers) into the special tokens of b's
// vocabulary that spell them, and tokenizes the text between as b does.
// Markers the vocabulary has no special token for are left as text. The
// Close and Path methods of b are kept.
func SpecialTokens(b decode.LogitsBackend, markers ...string) decode.LogitsBackend {
	all := specialIDs(b.Vocab())
	s := &specialBackend{LogitsBackend: b, ids: map[string]int{}}
	for _, mk := range markers {
		if id, ok := all[mk]; ok {
			s.ids[mk] = id
		}
	}
	return s
}

type specialBackend struct {
	decode.LogitsBackend
	ids map[string]int // marker text → special token
}

var _ decode.LogitsBackend = (*specialBackend)(nil)

func (s *specialBackend) Close() error {
	if c, ok := s.LogitsBackend.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

func (s *specialBackend) Path() string {
	if p, ok := s.LogitsBackend.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// Tokenize splits text at the markers, tokenizes the pieces between
// them without BOS, and puts BOS (when addSpecial asks for it) first.
func (s *specialBackend) Tokenize(text string, addSpecial bool) ([]int, error) {
	if len(s.ids) == 0 {
		return s.LogitsBackend.Tokenize(text, addSpecial)
	}
	return TokenizeMarked(text, addSpecial, s.ids, s.LogitsBackend.Tokenize)
}

// TokenizeMarked tokenizes text in which the markers of ids stand for
// their special tokens: each marker (the longest, where several begin
// at one place) becomes its id, the text between goes through tokenize
// without special tokens, and BOS (tokenize("", true)) comes first when
// addSpecial asks for it.
func TokenizeMarked(text string, addSpecial bool, ids map[string]int, tokenize func(text string, addSpecial bool) ([]int, error)) ([]int, error) {
	var out []int
	if addSpecial {
		bos, err := tokenize("", true)
		if err != nil {
			return nil, err
		}
		out = append(out, bos...)
	}
	for text != "" {
		at, mk := len(text), ""
		for m := range ids {
			if i := strings.Index(text, m); i >= 0 && (i < at || i == at && len(m) > len(mk)) {
				at, mk = i, m
			}
		}
		if at > 0 {
			toks, err := tokenize(text[:at], false)
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
		}
		if mk == "" {
			break
		}
		out = append(out, ids[mk])
		text = text[at+len(mk):]
	}
	return out, nil
}
