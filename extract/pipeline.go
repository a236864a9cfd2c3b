package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reins-go/reins/internal/fileread"
)

// Document is one input: an ID that names it in the output, and its
// text, or the error that reading it met (recorded as its result).
type Document struct {
	ID   string
	Text string
	Err  error
	// Source says where the document was read: a file's path, or
	// "FILE:LINE" for a line of a .jsonl file.
	Source string
}

// InputOptions configures ReadInputs.
type InputOptions struct {
	// TextField and IDField name the members of a JSONL line that hold
	// the text (default "text") and the ID (default "id"; a line without
	// one, or with an empty one, is "FILE:LINE").
	TextField, IDField string
}

// MaxDocuments bounds the documents of one run.
const MaxDocuments = 1 << 20

// ReadInputs reads documents from paths: a text file is one document
// (its ID is its path); a file ending in .jsonl holds one JSON object
// per line; a folder holds text and .jsonl files (walked in lexical
// order; names beginning with "." are skipped). A document that cannot
// be read (too large, not UTF-8, a bad JSONL line) comes back with its
// Err set, so that the run records it; a path that does not exist, and
// two documents with one ID, are errors.
func ReadInputs(paths []string, opts *InputOptions) ([]Document, error) {
	o := InputOptions{TextField: "text", IDField: "id"}
	if opts != nil {
		if opts.TextField != "" {
			o.TextField = opts.TextField
		}
		if opts.IDField != "" {
			o.IDField = opts.IDField
		}
	}
	var docs []Document
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if docs, err = readFile(docs, p, o); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				docs, err = readFile(docs, path, o)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	seen := map[string]string{}
	for _, d := range docs {
		if first, ok := seen[d.ID]; ok {
			return nil, fmt.Errorf("extract: two documents have the ID %q: %s and %s", d.ID, first, d.Source)
		}
		seen[d.ID] = d.Source
	}
	return docs, nil
}

func readFile(docs []Document, path string, o InputOptions) ([]Document, error) {
	if len(docs) >= MaxDocuments {
		return nil, fmt.Errorf("extract: more than MaxDocuments (%d) documents", MaxDocuments)
	}
	f, err := fileread.Open(path)
	if err != nil {
		return append(docs, Document{ID: path, Err: err, Source: path}), nil
	}
	defer f.Close()
	if strings.HasSuffix(path, ".jsonl") {
		return readJSONL(docs, path, f, o)
	}
	b, err := fileread.ReadAll(f, "the document", MaxDocumentBytes)
	switch {
	case err != nil:
		return append(docs, Document{ID: path, Err: err, Source: path}), nil
	case !utf8.Valid(b):
		return append(docs, Document{ID: path, Err: errors.New("not UTF-8 text"), Source: path}), nil
	}
	return append(docs, Document{ID: path, Text: string(b), Source: path}), nil
}

// MaxJSONLLineBytes bounds one line of a JSONL input: room for a text of
// MaxDocumentBytes escaped (a control character's \u0001 is 6 bytes for
// 1) and other members.
// A longer line is that document's error, and the lines after it are
// read on.
const MaxJSONLLineBytes = 8 * MaxDocumentBytes

func readJSONL(docs []Document, path string, r io.Reader, o InputOptions) ([]Document, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, MaxJSONLLineBytes, true)
		long := errors.Is(err, errLongLine) // readLine read past it
		if long {
			err = nil
		}
		if err != nil && err != io.EOF {
			return append(docs, Document{ID: path, Err: err, Source: path}), nil
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF")) // a byte order mark
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 || long {
			if len(docs) >= MaxDocuments {
				return nil, fmt.Errorf("extract: more than MaxDocuments (%d) documents", MaxDocuments)
			}
			src := path + ":" + strconv.Itoa(n)
			d := Document{ID: src, Err: fmt.Errorf("a line longer than MaxJSONLLineBytes (%d)", MaxJSONLLineBytes), Source: src}
			if !long {
				d = jsonlDocument(trimmed, src, o)
			}
			docs = append(docs, d)
		}
		if err == io.EOF {
			return docs, nil
		}
	}
}

// jsonlDocument is the document on a JSONL line read at src (FILE:LINE,
// its ID when the line names none).
func jsonlDocument(line []byte, src string, o InputOptions) Document {
	d := Document{ID: src, Source: src}
	var obj map[string]any
	if !utf8.Valid(line) { // json would read U+FFFD in silence
		d.Err = errors.New("not UTF-8 text")
		return d
	}
	if err := json.Unmarshal(line, &obj); err != nil {
		d.Err = fmt.Errorf("not a JSON object: %w", err)
		return d
	}
	switch v := obj[o.IDField].(type) {
	case nil: // none: FILE:LINE
	case string:
		if v != "" {
			d.ID = v
		}
	case float64:
		d.ID = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		d.Err = fmt.Errorf("member %q: want a string or a number as the ID", o.IDField)
		return d
	}
	text, ok := obj[o.TextField].(string)
	switch {
	case !ok:
		d.Err = fmt.Errorf("no string member %q", o.TextField)
	case len(text) > MaxDocumentBytes:
		d.Err = fmt.Errorf("larger than MaxDocumentBytes (%d)", MaxDocumentBytes)
	default:
		d.Text = text
	}
	return d
}

// skipLine reads r past the next newline: nil, or io.EOF when none
// follows.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// Record is one line of a run's output: a document's ID and its value
// with every field's confidence, raw probability and alternatives, or
// the error that stopped it. Probabilities are written to 6 significant
// digits.
type Record struct {
	ID           string                   `json:"id"`
	Value        json.RawMessage          `json:"value,omitempty"`
	Confidence   map[string]float64       `json:"confidence,omitempty"`
	Raw          map[string]float64       `json:"raw,omitempty"`
	Alternatives map[string][]Alternative `json:"alternatives,omitempty"`
	Error        string                   `json:"error,omitempty"`
}

// NewRecord returns the record of a document's result, or of its error.
func NewRecord(id string, res *Result, err error) Record {
	r := Record{ID: id}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Value = res.Value
	r.Confidence, r.Raw = map[string]float64{}, map[string]float64{}
	for _, f := range res.Fields {
		r.Confidence[f.Pointer] = round(f.Confidence)
		r.Raw[f.Pointer] = round(f.Raw)
		if len(f.Alternatives) > 0 {
			if r.Alternatives == nil {
				r.Alternatives = map[string][]Alternative{}
			}
			alts := slices.Clone(f.Alternatives)
			for i := range alts {
				alts[i].Prob, alts[i].Logprob = round(alts[i].Prob), round(alts[i].Logprob)
			}
			r.Alternatives[f.Pointer] = alts
		}
	}
	return r
}

// round keeps 6 significant digits, so that a float computed in another
// order (another batch on llama.cpp) writes the same line.
func round(f float64) float64 {
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 6, 64), 64)
	return r
}

// RunOptions configures Run.
type RunOptions struct {
	// Concurrency is how many documents are extracted at once (0: 4).
	Concurrency int
	// Skip holds the IDs of documents already done (Resume's), which
	// are left out.
	Skip map[string]bool
	// Progress, when set, is called after each document is written,
	// with the documents written and the documents to do in this run.
	Progress func(done, total int)
	// Written, when set, is called after each document is written, in
	// the documents' order, with its result (nil when it failed).
	Written func(id string, res *Result)
}

// Stats counts what a run did.
type Stats struct {
	Done, Failed, Skipped int
}

// Run extracts every document not in opts.Skip and writes one Record
// per line to w, in the documents' order (so that an interrupted run,
// resumed, writes the same file as one that was not). A document that
// fails is recorded with its error and the run goes on. Run returns when
// every document is written, or when ctx is done (documents in progress
// are then not written); the error is ctx's or w's.
func (x *Extractor) Run(ctx context.Context, docs []Document, w io.Writer, opts *RunOptions) (Stats, error) {
	var o RunOptions
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	var st Stats
	var todo []Document
	for _, d := range docs {
		if o.Skip[d.ID] {
			st.Skipped++
			continue
		}
		todo = append(todo, d)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		i   int
		rec Record
		res *Result
	}
	jobs := make(chan int)
	results := make(chan done)
	var wg sync.WaitGroup
	for range min(o.Concurrency, max(1, len(todo))) {
		wg.Go(func() {
			for i := range jobs {
				d := todo[i]
				err := d.Err
				var res *Result
				if err == nil {
					res, err = x.Extract(ctx, d.Text)
				}
				if ctx.Err() != nil {
					return // cut, not failed: left for the next run
				}
				if err != nil {
					res = nil
				}
				select {
				case results <- done{i, NewRecord(d.ID, res, err), res}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := range todo {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	pending := map[int]done{}
	next := 0
	var werr error
	for r := range results {
		pending[r.i] = r
		for werr == nil && ctx.Err() == nil {
			d, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			rec, line, err := recordLine(d.rec)
			if rec.Error != "" {
				d.res = nil
			}
			if err == nil {
				_, err = w.Write(line)
			}
			if err != nil {
				werr = err
				cancel()
				break
			}
			next++
			if rec.Error != "" {
				st.Failed++
			} else {
				st.Done++
			}
			if o.Written != nil {
				o.Written(rec.ID, d.res)
			}
			if o.Progress != nil {
				o.Progress(next, len(todo))
			}
		}
	}
	if werr != nil {
		return st, werr
	}
	if next < len(todo) {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		return st, errors.New("extract: the run ended before every document was written")
	}
	return st, nil
}

// recordLine returns rec's line of output and the record it holds: in
// place of a line longer than MaxRecordBytes, a record of that error.
func recordLine(rec Record) (Record, []byte, error) {
	line, err := json.Marshal(rec)
	if err != nil || len(line) < MaxRecordBytes {
		return rec, append(line, '\n'), err
	}
	rec = Record{ID: rec.ID, Error: fmt.Sprintf("its record is %d bytes, more than MaxRecordBytes (%d): ask for fewer alternatives or tokens", len(line), MaxRecordBytes)}
	line, err = json.Marshal(rec)
	return rec, append(line, '\n'), err
}

// MaxRecordBytes bounds one line of a run's output, its newline counted:
// Run writes the record of a document whose record would be longer as
// an error, and Resume refuses a longer line.
const MaxRecordBytes = 64 << 20

// Resume opens the output file path for a run that goes on where an
// earlier one stopped: it returns the file, positioned at its end, and
// the IDs of the documents it records. A last line that was cut before
// its end (the earlier run was killed while writing it) is removed. A
// file that does not exist is created. A document recorded with an
// error counts as done; ResumeRetryingErrors runs it again.
//
// Anything else in the file is an error naming the file and the line, and
// the file is left as it was: a line that is not a record, a line longer
// than MaxRecordBytes, more than MaxDocuments records, a path that is not
// a regular file.
func Resume(path string) (*os.File, map[string]bool, error) {
	f, done, err := resume(path)
	if err != nil {
		return nil, nil, err
	}
	for id := range done {
		done[id] = true
	}
	return f, done, nil
}

// ResumeRetryingErrors is Resume for a run of docs that also retries
// those of them that failed: the IDs it returns leave out the documents
// of docs whose every record is an error, and those records are taken
// out of the file first; their new records come at the end. Errors of
// documents not in docs stay, and count as done. The file is written
// anew beside itself (in the same folder, with its permissions; the
// owner becomes the caller), synced and renamed over it, so that it is
// whole at every moment; a link to it by another name keeps the old
// contents.
func ResumeRetryingErrors(path string, docs []Document) (*os.File, map[string]bool, error) {
	f, done, err := resume(path)
	if err != nil {
		return nil, nil, err
	}
	retry := map[string]bool{}
	for _, d := range docs {
		if ok, seen := done[d.ID]; seen && !ok {
			retry[d.ID] = true
		}
	}
	for id := range done {
		if retry[id] {
			delete(done, id)
		} else {
			done[id] = true
		}
	}
	if len(retry) == 0 {
		return f, done, nil // nothing to retry: the file stays as it is
	}
	if f, err = dropFailed(f, path, retry); err != nil {
		return nil, nil, err
	}
	return f, done, nil
}

// resume opens path, removes a cut last line, and returns the file at
// its end and each ID it records: true when one of its records holds a
// value, false when every one is an error.
func resume(path string) (*os.File, map[string]bool, error) {
	f, err := fileread.OpenWrite(path)
	if err != nil {
		return nil, nil, err
	}
	done, good, err := readRecordIDs(f, path)
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, done, nil
}

// dropFailed writes f (the file path, of whole records) anew without
// the error records of the documents in retry, renames it over path and
// returns path opened again, at its end; f is closed. On an error before
// the rename, path is left as it was.
func dropFailed(f *os.File, path string, retry map[string]bool) (_ *os.File, err error) {
	defer f.Close()
	target, err := filepath.EvalSymlinks(path) // rename over the file, not a link to it
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".retry-*")
	if err != nil {
		return nil, fmt.Errorf("extract: %s: taking out the errors to retry needs a new file beside it: %w", path, err)
	}
	defer func() {
		tmp.Close()
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	// The file was read whole before: each line is a record or blank.
	br, bw := bufio.NewReaderSize(f, 64<<10), bufio.NewWriterSize(tmp, 64<<10)
	for {
		line, err := readLine(br, MaxRecordBytes, false)
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
		if id, failed, _ := record(line); failed && retry[id] {
			continue
		}
		if _, err := bw.Write(line); err != nil {
			return nil, err
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return nil, fmt.Errorf("extract: %s: taking out the errors to retry: %w", path, err)
	}
	if dir, err := os.Open(filepath.Dir(target)); err == nil {
		dir.Sync() // the rename on disk too; where a folder cannot be synced, as good as it gets
		dir.Close()
	}
	out, err := fileread.OpenWrite(path)
	if err == nil {
		_, err = out.Seek(0, io.SeekEnd)
		if err != nil {
			out.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("extract: %s: reopening it after taking out the errors to retry: %w", path, err)
	}
	return out, nil
}

// readRecordIDs reads a run's output from r (the file path) and returns
// the IDs it records, each true when one of its records holds a value
// and false when every one is an error, and the length of its whole
// lines.
func readRecordIDs(r io.Reader, path string) (map[string]bool, int64, error) {
	done := map[string]bool{}
	var good int64
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, MaxRecordBytes, false)
		switch {
		case err == io.EOF:
			return done, good, nil // a line without its newline was cut
		case errors.Is(err, errLongLine):
			return nil, 0, fmt.Errorf("extract: %s:%d: a line longer than MaxRecordBytes (%d): not the output of an extract run", path, n, MaxRecordBytes)
		case err != nil:
			return nil, 0, err
		}
		good += int64(len(line))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, failed, err := record(line)
		if err != nil {
			return nil, 0, fmt.Errorf("extract: %s:%d: not a record of an extract run (%v); the file is left as it is", path, n, err)
		}
		ok, seen := done[id]
		if !seen && len(done) >= MaxDocuments {
			return nil, 0, fmt.Errorf("extract: %s:%d: more than MaxDocuments (%d) records", path, n, MaxDocuments)
		}
		done[id] = ok || !failed
	}
}

// recordID returns the ID of the record on line: a JSON object with
// Record's members only, an ID, and a value or an error.
func recordID(line []byte) (string, error) {
	id, _, err := record(line)
	return id, err
}

// record is recordID, and whether the record is an error.
func record(line []byte) (id string, failed bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return "", false, err
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return "", false, fmt.Errorf("%.20q after the record", rest)
	}
	switch {
	case rec.ID == "":
		return "", false, errors.New(`no "id"`)
	case rec.Value == nil && rec.Error == "":
		return "", false, errors.New(`neither "value" nor "error"`)
	}
	return rec.ID, rec.Value == nil, nil
}

var errLongLine = errors.New("line too long")

// readLine returns the next line of r with its newline, or errLongLine
// once it passes limit bytes: having read past the line with skipLong,
// else without reading further. A last line without a newline comes
// back with io.EOF; an error of r comes back as it is, even on the part
// that passes limit.
func readLine(r *bufio.Reader, limit int, skipLong bool) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > limit {
			if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
				return nil, err // the reader failed: that, not the length, is what went wrong
			}
			if skipLong && err == bufio.ErrBufferFull {
				if err := skipLine(r); err != nil && err != io.EOF {
					return nil, err
				}
			}
			return nil, errLongLine
		}
		line = append(line, part...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}
