package jsonschema

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"
)

// flatDraft2020 is draft 2020-12's metaschema written as one document
// (see its $comment): the original is an allOf of seven vocabulary
// metaschemas joined by $dynamicRef, which the validator checks
// vocabulary by vocabulary, and most schemas (all that name no $schema)
// are checked against it. The validator checks the 64 schemas around
// maskbench-dev's TTFM p99 against this one in 140 ms, against the
// original in 400 ms.
//
//go:embed metaschema/draft2020-12.json
var flatDraft2020 string

const (
	draft4URL        = "http://json-schema.org/draft-04/schema"
	draft6URL        = "http://json-schema.org/draft-06/schema"
	draft7URL        = "http://json-schema.org/draft-07/schema"
	draft2020URL     = "https://json-schema.org/draft/2020-12/schema"
	flatDraft2020URL = "https://reins.invalid/metaschema/draft2020-12.json"
)

// metaschemas are the drafts' metaschemas (santhosh-tekuri/jsonschema
// carries drafts 4 to 2019-09; draft 2020-12's is flatDraft2020),
// compiled once per process on first use and read-only after: checking
// a schema against its draft's metaschema is most of what compiling it
// with the validator costs, without building a validator Compile does
// not use.
var metaschemas = sync.OnceValues(func() (map[string]*santhosh.Schema, error) {
	out := map[string]*santhosh.Schema{}
	for _, url := range []string{
		"http://json-schema.org/draft-04/schema", "http://json-schema.org/draft-06/schema",
		"http://json-schema.org/draft-07/schema", "https://json-schema.org/draft/2019-09/schema",
	} {
		s, err := santhosh.NewCompiler().Compile(url)
		if err != nil {
			return nil, fmt.Errorf("jsonschema: metaschema %s: %w", url, err)
		}
		out[url] = s
	}
	c := santhosh.NewCompiler()
	c.AssertFormat = true // as the validator does for its own metaschemas
	if err := c.AddResource(flatDraft2020URL, strings.NewReader(flatDraft2020)); err != nil {
		return nil, fmt.Errorf("jsonschema: metaschema %s: %w", flatDraft2020URL, err)
	}
	s, err := c.Compile(flatDraft2020URL)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: metaschema %s: %w", flatDraft2020URL, err)
	}
	out[draft2020URL] = s
	return out, nil
})

// checkSchema reports whether doc (the decoded schema text raw) is a
// valid schema: against its draft's metaschema, or, for a $schema
// reins does not know, by compiling it with the validator. Drafts 4, 6,
// 7 and 2020-12 (and a schema that names none) are checked by reins' own
// walks, which agree with the validator's metaschemas (the
// TestMetaCheck tests and FuzzMetaCheck) in a fraction of its time;
// draft 2019-09 by the validator's.
func checkSchema(doc any, raw []byte, opts Options) error {
	url := draft2020URL // the validator's default draft
	if root, ok := doc.(map[string]any); ok {
		if u, ok := root["$schema"].(string); ok {
			url = strings.TrimSuffix(strings.Replace(u, "https://json-schema.org/draft-0", "http://json-schema.org/draft-0", 1), "#")
		}
	}
	switch url {
	case draft2020URL:
		return metaCheck2020(doc)
	case draft4URL:
		return metaCheckDraft4(doc)
	case draft6URL:
		return metaCheckDraft6(doc)
	case draft7URL:
		return metaCheckDraft7(doc)
	}
	// The validator compiles every pattern with Go's regexp before it
	// judges anything: refuse first those no grammar could hold.
	w := &metaWalk{sorted: true}
	if err := w.patternSizes(doc); err != nil {
		return err
	}
	metas, err := metaschemas()
	if err != nil {
		return err
	}
	meta, ok := metas[url]
	if !ok {
		if _, err := NewValidator(raw, opts); err != nil {
			return schemaError(err)
		}
		return nil
	}
	if err := meta.Validate(doc); err != nil {
		return schemaError(err)
	}
	return nil
}

// schemaError is the *Error for a schema the validator finds invalid:
// at the pointer of one fault it names, with its message. Of several,
// the one at the least pointer (then keyword path, then message): the
// validator walks a schema's objects in map order, so the order of its
// causes changes from run to run.
func schemaError(err error) error {
	var ve *santhosh.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Pointer: "#", Msg: err.Error(), Err: err}
	}
	leaf := firstFault(ve)
	e := &Error{Pointer: "#" + leaf.InstanceLocation, Msg: "invalid schema: " + leaf.Message, Err: err}
	if i := strings.LastIndexByte(e.Pointer, '/'); i >= 0 {
		e.Pointer, e.Keyword = e.Pointer[:i], e.Pointer[i+1:]
	}
	return e
}

// firstFault returns, of the faults under ve (the causes without causes
// of their own), the least by instance pointer, keyword path and
// message.
func firstFault(ve *santhosh.ValidationError) *santhosh.ValidationError {
	if len(ve.Causes) == 0 {
		return ve
	}
	var best *santhosh.ValidationError
	for _, c := range ve.Causes {
		f := firstFault(c)
		if best == nil || cmp.Or(
			cmp.Compare(f.InstanceLocation, best.InstanceLocation),
			cmp.Compare(f.KeywordLocation, best.KeywordLocation),
			cmp.Compare(f.Message, best.Message)) < 0 {
			best = f
		}
	}
	return best
}
