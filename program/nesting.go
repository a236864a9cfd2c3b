package program

import "strings"

// listNesting finds the first '[' inside a tag that opens a list nested
// more than MaxNesting deep, and returns its byte offset, or -1. The
// parser recurses once per nested list and has no bound of its own: a
// template of 200,000 nested brackets overflowed the Go stack, which no
// recover catches. It reads the template as the lexer does: text,
// comments ({{!-- --}} and {{! }}), and tags, whose strings it skips.
func listNesting(src string) int {
	for i := 0; i < len(src); {
		open := strings.Index(src[i:], "{{")
		if open < 0 {
			return -1
		}
		i += open
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
					return i
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
	return -1
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
