// Package pyjson serialises JSON the way Python's json.dumps does by
// default with ensure_ascii=False (separators ", " and ": ", non-ASCII
// kept as UTF-8, object keys in their original order), which is how
// MaskBench turns its test instances into text.
package pyjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Dumps re-serialises the JSON value in data. Numbers keep their source
// spelling (Python would re-print floats with repr; MaskBench's integers
// and most decimals read the same).
func Dumps(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b strings.Builder
	if err := value(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("pyjson: trailing data after the value")
	}
	return b.String(), nil
}

func value(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("pyjson: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		closing := json.Delim('}')
		if t == '[' {
			closing = ']'
		}
		b.WriteRune(rune(t))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return fmt.Errorf("pyjson: %w", err)
				}
				writeString(b, k.(string))
				b.WriteString(": ")
			}
			if err := value(dec, b); err != nil {
				return err
			}
		}
		end, err := dec.Token()
		if err != nil || end != closing {
			return fmt.Errorf("pyjson: unbalanced %c", t)
		}
		b.WriteRune(rune(closing))
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
