package extract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeRefusesWhatItDidNotWrite: a file that holds anything but
// records and a cut last line is an error naming the file and the line,
// and the file is left byte for byte as it was.
func TestResumeRefusesWhatItDidNotWrite(t *testing.T) {
	rec := `{"id":"a","value":{"name":"Ann"}}` + "\n"
	for _, c := range []struct{ name, text, want string }{
		{"a text file", "Dear diary,\nToday\n", ":1: not a record"},
		{"a damaged line before whole records", rec + "{\"id\":\"b\",\"val\n" + `{"id":"c","error":"x"}` + "\n", ":2: not a record"},
		{"an input file", `{"id":"a","text":"The cat."}` + "\n", `:1: not a record of an extract run (json: unknown field "text")`},
		{"a record without its value", rec + `{"id":"b"}` + "\n", `:2: not a record of an extract run (neither "value" nor "error")`},
		{"a record without an ID", `{"value":1}` + "\n", `:1: not a record of an extract run (no "id")`},
		{"two values on a line", rec + `{"id":"b","value":1} {"id":"c","value":2}` + "\n", `:2: not a record of an extract run ("{\"id\":\"c\",\"value\":2}" after the record)`},
		{"a brace after a record", rec + `{"id":"b","value":1}}` + "\n", `:2: not a record of an extract run ("}" after the record)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(c.text), 0o644))
			f, _, err := Resume(path)
			if f != nil {
				f.Close()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), path+c.want)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.text, string(b), "the file is left as it was")
		})
	}
}

// TestResumeKeepsRecordsAndDropsOnlyACutLine: blank lines and every whole
// record are kept; only a last line without its newline goes.
func TestResumeKeepsRecordsAndDropsOnlyACutLine(t *testing.T) {
	whole := `{"id":"a","value":null}` + "\n\n" + `{"id":"b","error":"no"}` + "\n"
	path := filepath.Join(t.TempDir(), "out.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(whole+`{"id":"c","value":{"na`), 0o644))
	f, done, err := Resume(path)
	require.NoError(t, err)
	_, err = f.WriteString("next\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, map[string]bool{"a": true, "b": true}, done)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, whole+"next\n", string(b), "written after the last whole line")
}

// TestResumeBoundsALine: a line longer than MaxRecordBytes (a sparse file
// of zero bytes, which has no newline) is refused once the bound is
// passed, not read to its end.
func TestResumeBoundsALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"id":"a","value":1}`+"\n"), 0o644))
	require.NoError(t, os.Truncate(path, 1<<30)) // a gigabyte, sparse
	_, _, err := Resume(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+":2: a line longer than MaxRecordBytes")

	line, err := readLine(bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\n"), 16), 100, false)
	assert.ErrorIs(t, err, errLongLine, "101 bytes with the newline")
	assert.Nil(t, line)
	line, err = readLine(bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 99)+"\n"), 16), 100, false)
	assert.NoError(t, err)
	assert.Len(t, line, 100)

	// A read error that arrives with the bytes that pass the bound is
	// the error, not a long line.
	failed := errors.New("the disk went away")
	for _, skip := range []bool{false, true} {
		r := io.MultiReader(strings.NewReader(strings.Repeat("x", 30)), iotest.ErrReader(failed))
		line, err = readLine(bufio.NewReaderSize(r, 64), 20, skip)
		assert.ErrorIs(t, err, failed, "skipLong %v", skip)
		assert.Nil(t, line)
	}
}

// TestResumeRefusesADevice: an output that is not a regular file (a
// device that never ends) is refused before anything is read.
func TestResumeRefusesADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	_, _, err := Resume("/dev/zero")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/zero: not a regular file (a character device)")
}

// FuzzResume: whatever a file holds, reading it back neither panics nor
// keeps more than its whole lines, every ID it returns is on one of
// them, and an ID counts as failed exactly when each of its records is
// an error.
func FuzzResume(f *testing.F) {
	f.Add([]byte(`{"id":"a","value":1}` + "\n" + `{"id":"b","err`))
	f.Add([]byte("\n\n" + `{"id":"a","error":"x","confidence":{"":1}}` + "\n"))
	f.Add([]byte(`{"id":"a","value":1,"id":"b"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		done, good, err := readRecordIDs(bytes.NewReader(b), "f")
		if err != nil {
			return
		}
		if good > int64(len(b)) || (good > 0 && b[good-1] != '\n') || bytes.IndexByte(b[good:], '\n') >= 0 {
			t.Fatalf("kept %d of %d bytes", good, len(b))
		}
		want := map[string]bool{} // true: some record holds a value
		for _, line := range bytes.SplitAfter(b[:good], []byte("\n")) {
			if id, failed, err := record(line); err == nil {
				want[id] = want[id] || !failed
			}
		}
		if len(want) != len(done) {
			t.Fatalf("IDs %v, whole lines hold %v", done, want)
		}
		for id, ok := range want {
			if got, seen := done[id]; !seen || got != ok {
				t.Fatalf("ID %q of a whole line: %v, %v; want a value %v", id, got, seen, ok)
			}
		}
	})
}

// TestRecordLineIsBounded: a record whose line would pass MaxRecordBytes
// is written as its document's error, which Resume reads back.
func TestRecordLineIsBounded(t *testing.T) {
	rec, line, err := recordLine(Record{ID: "big", Value: json.RawMessage(`"` + strings.Repeat("x", MaxRecordBytes) + `"`)})
	require.NoError(t, err)
	assert.Less(t, len(line), 1000)
	assert.Contains(t, rec.Error, "more than MaxRecordBytes")
	id, err := recordID(line)
	require.NoError(t, err)
	assert.Equal(t, "big", id)

	small := Record{ID: "s", Value: json.RawMessage(`1`)}
	rec, line, err = recordLine(small)
	require.NoError(t, err)
	assert.Equal(t, small, rec)
	assert.Equal(t, `{"id":"s","value":1}`+"\n", string(line))
}

// TestResumeRetryingErrors: the run's documents whose every record is an
// error are left out of the IDs, and those records out of the file,
// which keeps everything else in its order, its permissions and the
// link that names it; errors of documents not in the run stay; a file
// with nothing to retry is not written.
func TestResumeRetryingErrors(t *testing.T) {
	const (
		a   = `{"id":"a","value":1}` + "\n"
		b   = `{"id":"b","error":"timed out"}` + "\n"
		c   = `{"id":"c","value":{"x":[]}}` + "\n"
		d1  = `{"id":"d","error":"once"}` + "\n"
		d2  = `{"id":"d","value":null}` + "\n"
		e   = `{"id":"e","error":"unfinished"}` + "\n"
		g   = `{"id":"g","error":"not in this run"}` + "\n"
		cut = `{"id":"f","val`
	)
	docs := func(ids ...string) []Document {
		var ds []Document
		for _, id := range ids {
			ds = append(ds, Document{ID: id})
		}
		return ds
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(a+"\n"+b+c+d1+d2+e+g+cut), 0o600))
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink("out.jsonl", link))

	f, done, err := Resume(link)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true, "g": true}, done, "Resume counts errors as done")

	f, done, err = ResumeRetryingErrors(link, docs("a", "b", "c", "d", "e", "f"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true, "c": true, "d": true, "g": true}, done)
	assert.Equal(t, link, f.Name(), "the file is named as the caller named it")
	_, err = f.WriteString(`{"id":"b","value":2}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, a+"\n"+c+d1+d2+g+`{"id":"b","value":2}`+"\n", string(got), "b's and e's errors and the cut line go, g's stays; a new record comes at the end")
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode().Type(), "the link is still a link")
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 2, "no file is left beside it")

	// Nothing of this run to retry (g is not in it): the same file, not
	// a copy.
	f, done, err = ResumeRetryingErrors(path, docs("a", "b"))
	require.NoError(t, err)
	assert.Len(t, done, 5)
	after, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.True(t, os.SameFile(st, after), "a file without errors to retry is not written anew")
}

// TestResumeRetryingErrorsRefusesWhatItDidNotWrite: a damaged file is an
// error, left as it was, with nothing beside it.
func TestResumeRetryingErrorsRefusesWhatItDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	text := `{"id":"b","error":"x"}` + "\n" + "Dear diary,\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	_, _, err := ResumeRetryingErrors(path, []Document{{ID: "b"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+":2: not a record")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, text, string(got))
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 1)
}
