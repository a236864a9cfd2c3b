package program

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reins-go/reins/decode"
	"github.com/reins-go/reins/internal/gguf"
	"github.com/reins-go/reins/vocab"
)

// ChatFormat is how role blocks are written for a model: the text before
// and after each role's turn.
type ChatFormat struct {
	Name string
	// Start and End hold each role's markers, indexed as roleNames
	// (system, user, assistant).
	Start, End [3]string
	// Special: the markers are special tokens of the model (such as
	// <|im_start|>). A prompt holds them as tokens only on a backend that
	// parses them (SpecialTokens); the end of a turn is then a hard
	// boundary: a gen at the end of an assistant turn ends at the model's
	// end-of-turn token, and variables and captures may not contain a
	// marker.
	Special bool
}

func roleIndex(role string) int { return slices.Index(roleNames[:], role) }

// Markers returns every marker text of the format.
func (f *ChatFormat) Markers() []string {
	var out []string
	for _, s := range append(f.Start[:], f.End[:]...) {
		for _, m := range specialPieces(s) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// specialPieces returns the <...> and [...] marker pieces of s.
func specialPieces(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		if j := strings.IndexByte(s[i:], '>'); j > 0 {
			out = append(out, s[i:i+j+1])
			i += j
		}
	}
	return out
}

// Chat formats reins knows, by name. PlainChat is for models without a
// chat template (the built-in model, base models).
const (
	ChatPlain  = "plain"
	ChatML     = "chatml"
	ChatLlama3 = "llama3"
	ChatGemma  = "gemma"
	ChatPhi3   = "phi3"
)

// KnownChat returns the chat format of that name: plain (System: ...,
// User: ..., Assistant: ..., one turn per line), chatml, llama3, gemma
// or phi3.
func KnownChat(name string) (*ChatFormat, error) {
	switch name {
	case ChatPlain:
		return &ChatFormat{Name: name, Start: [3]string{"System: ", "User: ", "Assistant: "}, End: [3]string{"\n", "\n", "\n"}}, nil
	case ChatML:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n"},
			End:   [3]string{"<|im_end|>\n", "<|im_end|>\n", "<|im_end|>\n"}}, nil
	case ChatLlama3:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|start_header_id|>system<|end_header_id|>\n\n", "<|start_header_id|>user<|end_header_id|>\n\n", "<|start_header_id|>assistant<|end_header_id|>\n\n"},
			End:   [3]string{"<|eot_id|>", "<|eot_id|>", "<|eot_id|>"}}, nil
	case ChatGemma:
		// Gemma has no system turn: a system block is a user turn.
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<start_of_turn>user\n", "<start_of_turn>user\n", "<start_of_turn>model\n"},
			End:   [3]string{"<end_of_turn>\n", "<end_of_turn>\n", "<end_of_turn>\n"}}, nil
	case ChatPhi3:
		return &ChatFormat{Name: name, Special: true,
			Start: [3]string{"<|system|>\n", "<|user|>\n", "<|assistant|>\n"},
			End:   [3]string{"<|end|>\n", "<|end|>\n", "<|end|>\n"}}, nil
	}
	return nil, fmt.Errorf("program: unknown chat format %q (want plain, chatml, llama3, gemma or phi3)", name)
}

// ChatFromTemplate recognises a model's chat template (the Jinja text of
// its tokenizer.chat_template) by the markers it writes: "" gives the
// plain format; a template reins does not know is an error.
func ChatFromTemplate(tmpl string) (*ChatFormat, error) {
	switch {
	case strings.TrimSpace(tmpl) == "":
		return KnownChat(ChatPlain)
	case strings.Contains(tmpl, "<|im_start|>"):
		return KnownChat(ChatML)
	case strings.Contains(tmpl, "<|start_header_id|>"):
		return KnownChat(ChatLlama3)
	case strings.Contains(tmpl, "<start_of_turn>"):
		return KnownChat(ChatGemma)
	case strings.Contains(tmpl, "<|user|>") && strings.Contains(tmpl, "<|end|>"):
		return KnownChat(ChatPhi3)
	}
	return nil, errors.New("program: the model's chat template is not one reins knows (chatml, llama3, gemma, phi3): set RunOptions.Chat")
}

// ChatFor returns the chat format of backend b: from the GGUF file's
// tokenizer.chat_template when b is a local model file (it has a Path
// method, as backends/llama's models do), else the plain format.
func ChatFor(b decode.Backend) (*ChatFormat, error) {
	p, ok := b.(interface{ Path() string })
	if !ok {
		return KnownChat(ChatPlain)
	}
	f, err := gguf.Open(p.Path())
	if err != nil {
		return nil, fmt.Errorf("program: read the model's chat template: %w", err)
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	return ChatFromTemplate(tmpl)
}

// SpecialTokens returns a backend over b whose Tokenize turns the given
// marker texts (a chat format's Markers, say) into the special tokens of
// b's vocabulary that spell them, and tokenizes the text between as b
// does. llama.cpp's backend reads "<|im_start|>" in a prompt as plain
// characters, so that a prompt cannot smuggle in a special token; a
// program with role blocks needs exactly those tokens, and a Program
// refuses variables and captures that contain a marker. Markers the
// vocabulary has no special token for are left as text.
//
// Use it when building the Model: reins.New(program.SpecialTokens(lm,
// format.Markers()...)). The Close and Path methods of b are kept.
func SpecialTokens(b decode.LogitsBackend, markers ...string) decode.LogitsBackend {
	v := b.Vocab()
	ids := map[string]int{}
	for _, mk := range markers {
		for id := range v.Len() {
			if k := v.Kind(id); (k == vocab.KindControl || k == vocab.KindUserDefined) && string(v.Bytes(id)) == mk {
				ids[mk] = id
				break
			}
		}
	}
	s := &specialBackend{LogitsBackend: b, ids: ids}
	for mk := range ids {
		s.marks = append(s.marks, mk)
	}
	slices.Sort(s.marks)
	return s
}

type specialBackend struct {
	decode.LogitsBackend
	ids   map[string]int
	marks []string
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
	if len(s.marks) == 0 {
		return s.LogitsBackend.Tokenize(text, addSpecial)
	}
	var out []int
	if addSpecial {
		bos, err := s.LogitsBackend.Tokenize("", true)
		if err != nil {
			return nil, err
		}
		out = append(out, bos...)
	}
	for text != "" {
		at, mk := len(text), ""
		for _, m := range s.marks {
			if i := strings.Index(text, m); i >= 0 && (i < at || i == at && len(m) > len(mk)) {
				at, mk = i, m
			}
		}
		if at > 0 {
			toks, err := s.LogitsBackend.Tokenize(text[:at], false)
			if err != nil {
				return nil, err
			}
			out = append(out, toks...)
		}
		if mk == "" {
			break
		}
		out = append(out, s.ids[mk])
		text = text[at+len(mk):]
	}
	return out, nil
}
