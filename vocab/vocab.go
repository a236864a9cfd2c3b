package vocab

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/reins-go/reins/internal/gguf"
)

// Kind says what a token is, as the model's tokenizer declares it.
type Kind uint8

// Token kinds. They follow the token types of GGUF files.
const (
	KindNormal      Kind = iota // ordinary text
	KindControl                 // control or special token (<s>, <|eot_id|>): never produced by tokenizing plain text
	KindByte                    // a byte-fallback token (<0x0A>) standing for one raw byte
	KindUserDefined             // a token added by the user, matched literally
	KindUnknown                 // the unknown token
	KindUnused                  // a placeholder that decodes to nothing
)

var kindNames = [...]string{"normal", "control", "byte", "user-defined", "unknown", "unused"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Special reports whether tokens of this kind stand for something other
// than their text: control and unknown tokens. A grammar allows them only
// where it names them.
func (k Kind) Special() bool { return k == KindControl || k == KindUnknown }

// Vocab is a model's vocabulary as raw bytes: for every token id, the
// exact byte string it stands for, its kind, and whether it ends
// generation. A Vocab is immutable and safe for concurrent use.
//
// Byte strings are what the tokens mean, not how the tokenizer spells
// them: SentencePiece's "▁" is a space, "<0x0A>" is the byte 0x0A,
// byte-level BPE's printable stand-ins ("Ġ", "Ċ") are the bytes they
// encode. A token that is not valid UTF-8 by itself keeps its bytes.
// Control tokens keep their text ("<|eot_id|>"); unused ones are empty.
type Vocab struct {
	blob []byte   // all byte strings, back to back
	off  []uint32 // token i is blob[off[i]:off[i+1]]
	// Spellings, likewise back to back: no pointer per token, so the
	// garbage collector has nothing to scan in a 128k vocabulary.
	pieceBlob []byte
	pieceOff  []uint32
	kinds     []Kind
	eog       []bool
	eogIDs    []int
	bos       int // -1 when none
	eos       int // -1 when none
	addBOS    bool
	model     string
}

// Len returns the number of tokens.
func (v *Vocab) Len() int { return len(v.kinds) }

// Bytes returns the byte string of token id. The slice must not be modified.
func (v *Vocab) Bytes(id int) []byte { return v.blob[v.off[id]:v.off[id+1]:v.off[id+1]] }

// Piece returns token id as the model file spells it ("▁the", "Ġthe", "<0x0A>").
func (v *Vocab) Piece(id int) string {
	b := v.pieceBlob[v.pieceOff[id]:v.pieceOff[id+1]]
	return unsafe.String(unsafe.SliceData(b), len(b)) // the blob is never written again
}

// Kind returns the kind of token id.
func (v *Vocab) Kind(id int) Kind { return v.kinds[id] }

// IsEOG reports whether token id ends generation.
func (v *Vocab) IsEOG(id int) bool { return id >= 0 && id < len(v.eog) && v.eog[id] }

// EOG returns the ids of the end-of-generation tokens, in increasing order.
func (v *Vocab) EOG() []int { return slices.Clone(v.eogIDs) }

// BOS returns the beginning-of-sequence token, or -1 when there is none.
func (v *Vocab) BOS() int { return v.bos }

// EOS returns the end-of-sequence token, or -1 when there is none.
func (v *Vocab) EOS() int { return v.eos }

// AddBOS reports whether the model expects BOS in front of every prompt.
func (v *Vocab) AddBOS() bool { return v.addBOS && v.bos >= 0 }

// Model returns the tokenizer family: "llama" (SentencePiece) or "gpt2"
// (byte-level BPE), as GGUF files name them.
func (v *Vocab) Model() string { return v.model }

// Decode returns the concatenated byte strings of tokens.
func (v *Vocab) Decode(tokens []int) []byte {
	var b []byte
	for _, t := range tokens {
		b = append(b, v.Bytes(t)...)
	}
	return b
}

// Spell returns tokens whose bytes are exactly b, taking at each step
// the longest text token (normal, byte or user-defined) that fits; false
// when some byte has no token. Use it where a tokenizer would not spell
// b exactly (invalid UTF-8, which tokenizers replace with U+FFFD, or a
// leading space SentencePiece adds). It builds an index of the
// vocabulary on each call: to spell many texts, use a Speller.
func (v *Vocab) Spell(b []byte) ([]int, bool) {
	return v.Speller().Spell(b)
}

// A Speller spells bytes with a vocabulary's longest tokens, as
// Vocab.Spell does, from an index of the vocabulary built once.
type Speller struct {
	byBytes map[string]int // the first text token of each byte string
	longest int            // bytes of the longest text token
}

// Speller indexes v's text tokens by their bytes.
func (v *Vocab) Speller() *Speller {
	s := &Speller{byBytes: map[string]int{}}
	for id := range v.Len() {
		switch v.Kind(id) {
		case KindNormal, KindByte, KindUserDefined:
			tb := v.Bytes(id)
			if len(tb) == 0 {
				continue
			}
			if _, dup := s.byBytes[string(tb)]; !dup {
				s.byBytes[string(tb)] = id
			}
			s.longest = max(s.longest, len(tb))
		}
	}
	return s
}

// Spell returns tokens whose bytes are exactly b (see Vocab.Spell).
func (s *Speller) Spell(b []byte) ([]int, bool) {
	var out []int
	for len(b) > 0 {
		n := min(s.longest, len(b))
		for ; n > 0; n-- {
			if id, ok := s.byBytes[string(b[:n])]; ok {
				out = append(out, id)
				break
			}
		}
		if n == 0 {
			return nil, false
		}
		b = b[n:]
	}
	return out, true
}

// Spec describes a vocabulary as a tokenizer declares it. It is the
// input of New; Load fills it from a GGUF file.
type Spec struct {
	Model  string   // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pieces []string // token texts as the tokenizer spells them
	Types  []int32  // GGUF token types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte); nil means all normal
	BOS    int      // -1 for none
	EOS    int      // -1 for none
	// ExtraEOG lists further end-of-generation ids (EOT, EOM, FIM
	// separators) beside EOS and the tokens llama.cpp recognises by text.
	ExtraEOG []int
	AddBOS   bool
}

// eogTexts are the token texts llama.cpp treats as ending generation
// whatever the model file says (llama-vocab.cpp, "special_eog_ids").
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
	"<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
}

// New builds a Vocab from a tokenizer's description.
func New(spec Spec) (*Vocab, error) {
	n := len(spec.Pieces)
	if n == 0 {
		return nil, fmt.Errorf("vocab: no tokens")
	}
	if spec.Types != nil && len(spec.Types) != n {
		return nil, fmt.Errorf("vocab: %d token types for %d tokens", len(spec.Types), n)
	}
	var unescape func(string) []byte
	switch spec.Model {
	case "llama":
		unescape = unescapeSentencePiece
	case "gpt2":
		unescape = unescapeByteLevel
	default:
		return nil, fmt.Errorf("vocab: tokenizer model %q is not supported (want llama or gpt2)", spec.Model)
	}
	v := &Vocab{
		off:      make([]uint32, 1, n+1),
		pieceOff: make([]uint32, 1, n+1),
		kinds:    make([]Kind, n),
		eog:      make([]bool, n),
		bos:      -1,
		eos:      -1,
		addBOS:   spec.AddBOS,
		model:    spec.Model,
	}
	for id, piece := range spec.Pieces {
		kind := KindNormal
		if spec.Types != nil {
			var err error
			if kind, err = kindOf(spec.Types[id]); err != nil {
				return nil, fmt.Errorf("vocab: token %d %q: %w", id, piece, err)
			}
		}
		if slices.Contains(eogTexts, piece) {
			kind = KindControl // llama.cpp forces these to control
			v.eog[id] = true
		}
		var b []byte
		switch kind {
		case KindNormal:
			b = unescape(piece)
		case KindByte:
			if spec.Model == "llama" {
				x, ok := parseByteToken(piece)
				if !ok {
					return nil, fmt.Errorf("vocab: byte token %d is spelled %q, want <0xNN>", id, piece)
				}
				b = []byte{x}
			} // byte-level BPE renders byte-typed tokens as nothing, as llama.cpp does
		case KindControl, KindUserDefined, KindUnknown:
			b = []byte(piece)
		}
		v.kinds[id] = kind
		v.blob = append(v.blob, b...)
		v.off = append(v.off, uint32(len(v.blob)))
		v.pieceBlob = append(v.pieceBlob, piece...)
		v.pieceOff = append(v.pieceOff, uint32(len(v.pieceBlob)))
	}
	check := func(what string, id int) (int, error) {
		if id < -1 || id >= n {
			return -1, fmt.Errorf("vocab: %s token %d outside the vocabulary of %d", what, id, n)
		}
		return id, nil
	}
	var err error
	if v.bos, err = check("BOS", spec.BOS); err != nil {
		return nil, err
	}
	if v.eos, err = check("EOS", spec.EOS); err != nil {
		return nil, err
	}
	for _, id := range append([]int{spec.EOS}, spec.ExtraEOG...) {
		if _, err := check("end-of-generation", id); err != nil {
			return nil, err
		}
		if id >= 0 {
			v.eog[id] = true
		}
	}
	// o200k_harmony: "<|end|>" separates messages there and does not end
	// generation when "<|return|>" and "<|call|>" exist (as in llama.cpp).
	if end, ret, call := v.find("<|end|>"), v.find("<|return|>"), v.find("<|call|>"); end >= 0 && ret >= 0 && call >= 0 {
		v.eog[end] = false
	}
	for id, e := range v.eog {
		if e {
			v.eogIDs = append(v.eogIDs, id)
		}
	}
	return v, nil
}

func (v *Vocab) find(piece string) int {
	for id := range v.kinds {
		if v.eog[id] && v.Piece(id) == piece {
			return id
		}
	}
	return -1
}

func kindOf(t int32) (Kind, error) {
	switch t {
	case 0, 1: // undefined is treated as normal, as llama.cpp does
		return KindNormal, nil
	case 2:
		return KindUnknown, nil
	case 3:
		return KindControl, nil
	case 4:
		return KindUserDefined, nil
	case 5:
		return KindUnused, nil
	case 6:
		return KindByte, nil
	}
	return 0, fmt.Errorf("unknown token type %d", t)
}

// parseByteToken parses SentencePiece's byte-fallback spelling <0xNN>.
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	x, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(x), err == nil
}

// unescapeSentencePiece turns SentencePiece's "▁" back into spaces.
func unescapeSentencePiece(s string) []byte {
	return bytes.ReplaceAll([]byte(s), []byte("▁"), []byte(" "))
}

// byteLevel is byte-level BPE's printable alphabet: printable Latin-1
// stands for itself; the other 68 byte values were moved, in order, to
// U+0100 onwards. It is computed once and never changed.
var byteLevel = func() (t struct {
	encode [256]rune
	decode map[rune]byte
}) {
	t.decode = make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) {
			r = next
			next++
		}
		t.encode[b] = r
		t.decode[r] = byte(b)
	}
	return t
}()

// ByteLevelEncode returns the byte-level BPE spelling of raw bytes, the
// inverse of what New does to the pieces of a gpt2-model vocabulary.
func ByteLevelEncode(raw []byte) string {
	out := make([]rune, len(raw))
	for i, b := range raw {
		out[i] = byteLevel.encode[b]
	}
	return string(out)
}

// unescapeByteLevel maps byte-level BPE's printable alphabet back to raw
// bytes. A code point outside that alphabet keeps its UTF-8 encoding.
func unescapeByteLevel(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := byteLevel.decode[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// bpeAddsBOS lists the byte-level BPE pre-tokenizers for which llama.cpp
// adds BOS by default (llama-vocab.cpp).
var bpeAddsBOS = []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "tekken", "chameleon"}

// Load reads the vocabulary of a GGUF model or vocabulary-only file.
func Load(path string) (*Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	v, err := FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// FromGGUF builds the vocabulary described by a GGUF header's
// tokenizer.ggml.* keys.
func FromGGUF(f *gguf.File) (*Vocab, error) {
	spec, err := SpecFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(spec)
}

// SpecFromGGUF reads a vocabulary's description from a GGUF
// header's tokenizer.ggml.* keys, for a caller that wants to adjust it
// before New.
func SpecFromGGUF(f *gguf.File) (Spec, error) {
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return Spec{}, fmt.Errorf("vocab: no tokenizer.ggml.model key")
	}
	pieces, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok {
		return Spec{}, fmt.Errorf("vocab: no tokenizer.ggml.tokens array")
	}
	spec := Spec{Model: model, Pieces: pieces, BOS: -1, EOS: -1}
	if v, ok := f.KV["tokenizer.ggml.token_type"]; ok {
		ts, ok := v.Ints()
		if !ok {
			return Spec{}, fmt.Errorf("vocab: tokenizer.ggml.token_type is a %s, want an integer array", v.Type)
		}
		spec.Types = make([]int32, len(ts))
		for i, t := range ts {
			spec.Types[i] = int32(t)
		}
	}
	id := func(key string) int {
		if x, ok := f.Int(key); ok && x >= 0 && x < int64(len(pieces)) {
			return int(x)
		}
		return -1
	}
	spec.BOS = id("tokenizer.ggml.bos_token_id")
	spec.EOS = id("tokenizer.ggml.eos_token_id")
	for _, key := range []string{"eot", "eom", "fim_pad", "fim_rep", "fim_sep"} {
		if x := id("tokenizer.ggml." + key + "_token_id"); x >= 0 {
			spec.ExtraEOG = append(spec.ExtraEOG, x)
		}
	}
	// llama.cpp's default: SentencePiece models add BOS, BPE ones do not,
	// unless the file says otherwise.
	pre, _ := f.String("tokenizer.ggml.pre")
	spec.AddBOS = model == "llama" || slices.Contains(bpeAddsBOS, pre)
	if v, ok := f.KV["tokenizer.ggml.add_bos_token"]; ok {
		if b, isBool := v.V.(bool); isBool {
			spec.AddBOS = b
		}
	}
	return spec, nil
}
