package program

import (
	"fmt"
	"strings"
)

// prescan reads the template as the lexer does (text, comments
// {{!-- --}} and {{! }}, and tags, whose strings it skips) for what the
// parser would pay dearly for, and returns the byte offset of the first
// such place, the kind of error it is and what it is, or -1:
//
//   - a list nested more than MaxNesting deep: the parser recurses once
//     per list with no bound of its own, and 200,000 nested brackets
//     overflowed the Go stack, which no recover catches;
//   - a {{!-- that no --}} closes: the lexer looks for the close to the
//     end of the template at each one, and a megabyte of them took half
//     an hour.
func prescan(src string) (int, ErrorKind, string) {
	lastClose := strings.LastIndex(src, "--}}")
	for i := 0; i < len(src); {
		open := strings.Index(src[i:], "{{")
		if open < 0 {
			return -1, 0, ""
		}
		i += open
		if strings.HasPrefix(src[i:], "{{!--") && lastClose < i+5 {
			return i, KindSyntax, "a comment is not closed ({{!-- wants --}})"
		}
		if end := commentEnd(src[i:]); end > 0 {
			i += end
			continue
		}
		i += 2
		depth := 0
	tag:
		for i < len(src) {
			switch src[i] {
			case '"':
				for i++; i < len(src) && src[i] != '"' && src[i] != '\n'; i++ {
					if src[i] == '\\' {
						i++
					}
				}
			case '[':
				if depth++; depth > MaxNesting {
					return i, KindLimit, fmt.Sprintf("lists nest deeper than MaxNesting (%d)", MaxNesting)
				}
			case ']':
				depth--
			case '}':
				if strings.HasPrefix(src[i:], "}}") {
					i += 2
					break tag
				}
			}
			i++
		}
	}
	return -1, 0, ""
}

// commentEnd returns the length of the comment s starts with, or 0:
// {{!-- anything --}}, or {{! anything but '}' }}.
func commentEnd(s string) int {
	if strings.HasPrefix(s, "{{!--") {
		if end := strings.Index(s[5:], "--}}"); end >= 0 {
			return 5 + end + 4
		}
	}
	if strings.HasPrefix(s, "{{!") {
		if end := strings.IndexByte(s[3:], '}'); end >= 0 && strings.HasPrefix(s[3+end:], "}}") {
			return 3 + end + 2
		}
	}
	return 0
}
