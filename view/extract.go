package view

import (
	"github.com/reins-go/reins/extract"
)

// Extracted is one document's extraction, for FromExtraction.
type Extracted struct {
	ID     string
	Result *extract.Result
}

// FromExtraction is the page of extracted documents: for each, a line
// with its ID, then its JSON value with every field's tokens shaded and
// outlined with its JSON pointer and confidence (extract.Field).
func FromExtraction(title string, docs []Extracted) *Page {
	p := &Page{Title: title}
	for i, d := range docs {
		if d.Result == nil {
			continue
		}
		head := d.ID + "\n"
		if i > 0 {
			head = "\n\n" + head
		}
		p.Segments = append(p.Segments, Segment{Text: head})
		spans := make([]span, len(d.Result.Fields))
		for k, f := range d.Result.Fields {
			spans[k] = span{name: f.Pointer, value: string(f.Value), tokens: f.Tokens, prob: f.Confidence}
		}
		p.appendSpans(string(d.Result.Value), spans)
	}
	return p
}
