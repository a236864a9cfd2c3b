package remote

import "fmt"

// Shape bounds how many JSON values an answer may hold, beside its
// bytes: decoded, a value costs many times its text (an empty object
// "{}," of three bytes becomes a map of hundreds), so an answer of
// millions of tiny values within the byte bound would still take
// gigabytes. 0 is no bound.
type Shape struct {
	Containers int // objects and arrays
	Values     int // entries of objects and arrays
}

// check scans buf, a JSON text, and says where it passes s, before it
// is decoded. It does not validate the JSON: the decoder does.
func (s Shape) check(buf []byte) error {
	containers, values := 0, 0
	inString, escaped := false, false
	for i, c := range buf {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			containers++
			if s.Containers > 0 && containers > s.Containers {
				return fmt.Errorf("the answer holds more than %d objects and arrays (at byte %d): more than its request can give", s.Containers, i)
			}
		case c == ',':
			values++
			if s.Values > 0 && values > s.Values {
				return fmt.Errorf("the answer holds more than %d values (at byte %d): more than its request can give", s.Values, i)
			}
		}
	}
	return nil
}
