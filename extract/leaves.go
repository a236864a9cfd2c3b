package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/reins-go/reins/internal/jsonptr"
)

// Leaf is a value of a JSON text that holds no other: a string, number,
// boolean, null, or an empty object or array.
type Leaf struct {
	Pointer    string // its JSON pointer ("" for a root scalar)
	Start, End int    // its bytes in the text
	Kind       byte   // the first byte: '"', '-' or a digit, 't', 'f', 'n', '{', '['
	// Path is the pointer's tokens, decoded (object keys and array
	// indices as strings).
	Path []string
}

// maxDepth bounds the nesting Leaves follows.
const maxDepth = 512

// Leaves returns the leaves of a JSON text in document order, with their
// byte spans. The text must be one JSON value (white space allowed).
func Leaves(text []byte) ([]Leaf, error) {
	s := &scanner{b: text}
	s.ws()
	if err := s.value(nil, 0); err != nil {
		return nil, err
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, fmt.Errorf("extract: JSON text goes on at byte %d", s.i)
	}
	return s.out, nil
}

type scanner struct {
	b   []byte
	i   int
	out []Leaf
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) fail(what string) error {
	return fmt.Errorf("extract: not JSON at byte %d: %s", s.i, what)
}

func (s *scanner) leaf(path []string, start int) {
	s.out = append(s.out, Leaf{Pointer: Pointer(path), Start: start, End: s.i, Kind: s.b[start], Path: append([]string(nil), path...)})
}

func (s *scanner) value(path []string, depth int) error {
	if depth > maxDepth {
		return errors.New("extract: JSON nested too deeply")
	}
	if s.i >= len(s.b) {
		return s.fail("unexpected end")
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			s.leaf(path, start)
			return nil
		}
		for {
			s.ws()
			ks := s.i
			if err := s.str(); err != nil {
				return err
			}
			var key string
			if err := json.Unmarshal(s.b[ks:s.i], &key); err != nil {
				return s.fail("bad key")
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.fail("want ':'")
			}
			s.i++
			s.ws()
			if err := s.value(append(path, key), depth+1); err != nil {
				return err
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				return nil
			}
			return s.fail("want ',' or '}'")
		}
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			s.leaf(path, start)
			return nil
		}
		for n := 0; ; n++ {
			s.ws()
			if err := s.value(append(path, strconv.Itoa(n)), depth+1); err != nil {
				return err
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				return nil
			}
			return s.fail("want ',' or ']'")
		}
	case c == '"':
		if err := s.str(); err != nil {
			return err
		}
	case c == '-' || c >= '0' && c <= '9':
		for s.i < len(s.b) && strings.IndexByte("+-0123456789.eE", s.b[s.i]) >= 0 {
			s.i++
		}
	case c == 't', c == 'f', c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+5)]), lit) {
				s.i += len(lit)
				s.leaf(path, start)
				return nil
			}
		}
		return s.fail("bad literal")
	default:
		return s.fail("unexpected character")
	}
	s.leaf(path, start)
	return nil
}

func (s *scanner) str() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.fail(`want '"'`)
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		}
	}
	return s.fail("unterminated string")
}

// Pointer returns the JSON pointer (RFC 6901) of a path of keys and
// indices.
func Pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(jsonptr.Escape(p))
	}
	return b.String()
}
