package gbnf

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types of the GBNF lexer, as participle names them in the struct
// tags of parse.go.
const (
	tokRuleStart lexer.TokenType = -(iota + 2) // "name ::=": a rule starts
	tokInt
	tokIdent
	tokString
	tokClass
	tokToken
	tokPunct
)

// gbnfLexer is a hand-written lexer for GBNF: a loop over bytes, no
// regular expressions. Whitespace and comments are skipped here.
type gbnfLexerDef struct{}

var gbnfLexer lexer.Definition = gbnfLexerDef{}

// Symbols names the token types for participle.
func (gbnfLexerDef) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "RuleStart": tokRuleStart, "Int": tokInt, "Ident": tokIdent,
		"String": tokString, "Class": tokClass, "Token": tokToken, "Punct": tokPunct,
	}
}

// Lex lexes r.
func (d gbnfLexerDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	var b strings.Builder
	if _, err := io.Copy(&b, r); err != nil {
		return nil, err
	}
	return d.LexString(filename, b.String())
}

// LexString lexes src.
func (gbnfLexerDef) LexString(filename, src string) (lexer.Lexer, error) {
	return &gbnfScanner{src: src, pos: lexer.Position{Filename: filename, Line: 1, Column: 1}}, nil
}

type gbnfScanner struct {
	src     string
	pos     lexer.Position // of src[pos.Offset]
	depth   int            // of open parentheses
	tooDeep bool           // the error is MaxNesting's
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// advance moves past n bytes, keeping line and column.
func (s *gbnfScanner) advance(n int) {
	for _, c := range []byte(s.src[s.pos.Offset : s.pos.Offset+n]) {
		if c == '\n' {
			s.pos.Line++
			s.pos.Column = 1
		} else if c < 0x80 || c >= 0xC0 {
			s.pos.Column++
		}
	}
	s.pos.Offset += n
}

func (s *gbnfScanner) errorf(format string, args ...any) error {
	return &lexer.Error{Msg: fmt.Sprintf(format, args...), Pos: s.pos}
}

// Next returns the next token.
func (s *gbnfScanner) Next() (lexer.Token, error) {
	// Skip whitespace and comments.
	for s.pos.Offset < len(s.src) {
		c := s.src[s.pos.Offset]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			s.advance(1)
			continue
		}
		if c == '#' {
			n := strings.IndexAny(s.src[s.pos.Offset:], "\r\n")
			if n < 0 {
				n = len(s.src) - s.pos.Offset
			}
			s.advance(n)
			continue
		}
		break
	}
	start := s.pos
	rest := s.src[s.pos.Offset:]
	if rest == "" {
		return lexer.EOFToken(start), nil
	}
	tok := func(t lexer.TokenType, n int) (lexer.Token, error) {
		s.advance(n)
		return lexer.Token{Type: t, Value: rest[:n], Pos: start}, nil
	}
	c := rest[0]
	switch {
	case isWord(c):
		n := 1
		for n < len(rest) && isWord(rest[n]) {
			n++
		}
		m := n
		for m < len(rest) && (rest[m] == ' ' || rest[m] == '\t') {
			m++
		}
		if strings.HasPrefix(rest[m:], "::=") {
			return tok(tokRuleStart, m+3)
		}
		d := 0
		for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
			d++
		}
		if d > 0 && (d == len(rest) || !(isWord(rest[d]) && rest[d] != '-')) {
			return tok(tokInt, d)
		}
		return tok(tokIdent, n)
	case c == '"' || c == '[':
		end := byte('"')
		what, t := "string", tokString
		if c == '[' {
			end, what, t = ']', "character class", tokClass
		}
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case end:
				return tok(t, i+1)
			}
		}
		return lexer.Token{}, s.errorf("unterminated %s", what)
	case c == '<' || (c == '!' && strings.HasPrefix(rest, "!<")):
		i := strings.IndexByte(rest, '<') + 1
		body := i
		for i < len(rest) && rest[i] != '>' && rest[i] != '<' && rest[i] != ' ' && rest[i] != '\t' && rest[i] != '\n' && rest[i] != '\r' {
			i++
		}
		if i == body || i == len(rest) || rest[i] != '>' {
			return lexer.Token{}, s.errorf("malformed token terminal: want <[123]> or <name>")
		}
		return tok(tokToken, i+1)
	case c == '(':
		if s.depth++; s.depth > MaxNesting {
			s.tooDeep = true
			return lexer.Token{}, s.errorf("parentheses nested more than %d deep (MaxNesting)", MaxNesting)
		}
		return tok(tokPunct, 1)
	case c == ')':
		s.depth = max(s.depth-1, 0)
		return tok(tokPunct, 1)
	case strings.IndexByte("|*+?{},.", c) >= 0:
		return tok(tokPunct, 1)
	}
	if r, size := utf8.DecodeRuneInString(rest); r != utf8.RuneError || size > 1 {
		return lexer.Token{}, s.errorf("unexpected character %s", strconv.QuoteRune(r))
	}
	return lexer.Token{}, s.errorf("invalid UTF-8 byte \\x%02x", c)
}
