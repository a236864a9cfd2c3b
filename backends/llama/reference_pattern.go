package llama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/reins-go/reins/internal/jsonptr"
)

// llama.cpp's json_schema_to_grammar turns a string's "pattern" into
// GBNF with a small hand-written scanner (common/json-schema-to-grammar.cpp,
// _visit_pattern) that trusts its input. On some patterns it takes the
// whole process down:
//
//   - a quantifier (*, +, ? or {m,n}) with nothing before it in its
//     group reads the last element of an empty sequence: a segmentation
//     fault. "(?:a)" is such a pattern: the scanner does not know (?:
//     and reads "?" as a quantifier at the start of the group;
//   - a ']' or '}' outside a class or count is never consumed, and the
//     scanner loops on it forever;
//   - groups nested thousands deep overflow its stack.
//
// Only patterns anchored at both ends (^...$) are scanned; the others
// it refuses. referencePatternFault replays that scanner on a pattern
// and reports where it would fail, so that SchemaToGrammar refuses the
// schema instead of calling it.

// referencePatternFault returns the first place where llama.cpp's
// pattern scanner would crash or never return on p, or nil.
func referencePatternFault(p string) error {
	if len(p) < 2 || p[0] != '^' || p[len(p)-1] != '$' {
		return nil // refused by llama.cpp with an error, never scanned
	}
	s := &patternScan{src: p[1 : len(p)-1]}
	return s.group(0)
}

// patternScan replays _visit_pattern's transform over src.
type patternScan struct {
	src   string
	i     int
	threw bool // llama.cpp threw (a count out of int's range): the conversion fails cleanly here
}

// patternFaultError says where in a pattern llama.cpp's scanner fails.
type patternFaultError struct {
	rest string // the pattern from where it fails, cut short
	what string
}

func (e *patternFaultError) Error() string {
	return fmt.Sprintf("%s, at %q", e.what, e.rest)
}

func (s *patternScan) fault(at int, what string) error {
	rest := s.src[at:] + "$"
	if len(rest) > 24 {
		rest = rest[:24] + "..."
	}
	return &patternFaultError{rest: rest, what: what}
}

// group scans one call of transform: a sequence up to its ')' or the
// end. empty is whether the sequence built so far has no element.
// Nothing after a throw is read.
func (s *patternScan) group(depth int) error {
	if depth > MaxReferenceNesting {
		return s.fault(s.i, fmt.Sprintf("groups nested more than %d deep (llama.cpp's scanner recurses and overflows its stack)", MaxReferenceNesting))
	}
	src, n := s.src, len(s.src)
	empty := true
	for s.i < n {
		switch c := src[s.i]; c {
		case '.', '|':
			s.i++
			empty = false
		case '(':
			s.i++
			if err := s.group(depth + 1); err != nil || s.threw {
				return err
			}
			empty = false
		case ')':
			s.i++
			return nil
		case '[':
			for s.i++; s.i < n && src[s.i] != ']'; s.i++ {
				if src[s.i] == '\\' {
					s.i++
				}
			}
			s.i++
			empty = false
		case '*', '+', '?':
			if empty {
				return s.fault(s.i, fmt.Sprintf("%q repeats nothing (llama.cpp's scanner reads past an empty sequence and crashes)", c))
			}
			s.i++
		case '{':
			at := s.i
			for s.i++; s.i < n && src[s.i] != '}'; s.i++ {
			}
			count := src[at+1 : min(s.i, n)]
			s.i++
			switch scanCount(count) {
			case countThrows:
				s.threw = true
				return nil
			case countUnread:
				return nil // transform returns early on a count it cannot read
			}
			if empty {
				return s.fault(at, fmt.Sprintf("{%s} repeats nothing (llama.cpp's scanner reads past an empty sequence and crashes)", count))
			}
		case ']', '}':
			return s.fault(s.i, fmt.Sprintf("a lone %q (llama.cpp's scanner never moves past it)", c))
		default:
			s.literal()
			empty = false
		}
	}
	return nil
}

// literal consumes a run of literal characters as the scanner does; it
// always consumes at least one, since the caller has seen that the first
// is not an operator.
func (s *patternScan) literal() {
	src, n := s.src, len(s.src)
	for first := true; s.i < n; first = false {
		switch c := src[s.i]; {
		case c == '\\' && s.i < n-1:
			s.i += 2
		case c == '"':
			s.i++
		case !patternOperator(c) && (s.i == n-1 || first || src[s.i+1] == '.' || !patternOperator(src[s.i+1])):
			s.i++
		default:
			return
		}
	}
}

// patternOperator is llama.cpp's NON_LITERAL_SET.
func patternOperator(c byte) bool { return strings.IndexByte("|.()[]{}*+?", c) >= 0 }

// countVerdict is what the scanner makes of the inside of {...}.
type countVerdict int

const (
	countRead   countVerdict = iota
	countUnread              // std::invalid_argument, caught by transform, which returns early
	countThrows              // std::out_of_range, caught only around the whole conversion
)

// scanCount reads the inside of {m}, {m,} or {m,n} as the scanner does,
// with std::stoi.
func scanCount(count string) countVerdict {
	nums := strings.Split(count, ",")
	switch len(nums) {
	case 1:
		return stoi(nums[0])
	case 2:
		for _, num := range nums {
			if num == "" {
				continue
			}
			if v := stoi(num); v != countRead {
				return v
			}
		}
	}
	return countRead
}

// stoi is std::stoi's verdict on s: unread when no number starts s after
// white space and a sign, throws when the number does not fit an int.
func stoi(s string) countVerdict {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if digits == 0 {
		return countUnread
	}
	if _, err := strconv.ParseInt(sign+s[:digits], 10, 32); err != nil {
		return countThrows
	}
	return countRead
}

// schemaPatternFault finds the first "pattern" string in a JSON schema
// on which llama.cpp's scanner fails, and names it by JSON pointer.
// Every object's "pattern" member is checked, wherever it is: a little
// wider than the places llama.cpp reads, never narrower. A schema the
// check cannot read is refused too, rather than passed unchecked:
// llama.cpp's JSON parser (nlohmann's) may read what Go's does not. It
// skips a leading byte order mark, and so does the check.
func schemaPatternFault(schema []byte) error {
	d := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(schema, []byte("\xEF\xBB\xBF"))))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("schema: not JSON whose patterns reins can check: %w", err)
	}
	return walkPatterns(v, "")
}

func walkPatterns(v any, ptr string) error {
	switch v := v.(type) {
	case map[string]any:
		if p, ok := v["pattern"].(string); ok {
			if err := referencePatternFault(p); err != nil {
				return fmt.Errorf("schema at %s/pattern %q: %w", ptr, p, err)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := walkPatterns(v[k], ptr+"/"+jsonptr.Escape(k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := walkPatterns(e, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	return nil
}
