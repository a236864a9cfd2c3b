//go:build unix

package jsonschema

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reins-go/reins/grammar"
)

// fileURL is the file: URL of path.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// loaderDir lays out a schema folder with a good file, a subfolder, a
// file over the limit, a named pipe, a folder, symbolic links inside
// and out, and a secret file beside the folder.
func loaderDir(t *testing.T) (dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "schemas")
	outside = filepath.Join(base, "secret.json")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "folder.json"), 0o755))
	write := func(path, text string) {
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(outside, `"SECRET-CONTENT"`)
	write(filepath.Join(dir, "good.json"), `{"type": "string", "maxLength": 3}`)
	write(filepath.Join(dir, "sub", "defs.json"), `{"$defs": {"n": {"type": "integer", "minimum": 1}}}`)
	write(filepath.Join(dir, "big.json"), `"`+strings.Repeat("x", 100)+`"`)
	write(filepath.Join(dir, "notjson.json"), "root:x:0:0:SECRET-CONTENT\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape.json")))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.json")))
	require.NoError(t, os.Symlink("good.json", filepath.Join(dir, "inner.json")))
	require.NoError(t, os.Symlink(base, filepath.Join(dir, "up")))
	return dir, outside
}

// TestDirLoader checks that DirLoader reads regular files under its
// folder, of bounded size, and refuses everything else with the URL and
// the reason, without the content and without waiting.
func TestDirLoader(t *testing.T) {
	dir, outside := loaderDir(t)
	load := DirLoader(dir, 64)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"a file under the folder", fileURL(filepath.Join(dir, "good.json")), ""},
		{"a file in a subfolder", fileURL(filepath.Join(dir, "sub", "defs.json")), ""},
		{"a symbolic link that stays inside", fileURL(filepath.Join(dir, "inner.json")), ""},
		{"/dev/zero", "file:///dev/zero", "not under " + dir},
		{"/dev/urandom", "file:///dev/urandom", "not under " + dir},
		{"/etc/passwd", "file:///etc/passwd", "not under " + dir},
		{"/proc/self/environ", "file:///proc/self/environ", "not under " + dir},
		{"a ../ escape", fileURL(dir) + "/../secret.json", "not under " + dir},
		{"a ../ escape, percent-encoded", fileURL(dir) + "/%2e%2e/secret.json", "not under " + dir},
		{"a named pipe", fileURL(filepath.Join(dir, "fifo.json")), "not a regular file (a named pipe)"},
		{"a folder", fileURL(filepath.Join(dir, "sub", "folder.json")), "not a regular file (a directory)"},
		{"a symbolic link to a file outside", fileURL(filepath.Join(dir, "escape.json")), "escapes"},
		{"a symbolic link to /dev/zero", fileURL(filepath.Join(dir, "zero.json")), "escapes"},
		{"a symbolic link to /etc/passwd", fileURL(filepath.Join(dir, "passwd.json")), "escapes"},
		{"a symbolic link to the folder above", fileURL(filepath.Join(dir, "up", "secret.json")), "escapes"},
		{"a file over the limit", fileURL(filepath.Join(dir, "big.json")), "the file is 102 bytes, more than the limit of 64"},
		{"a missing file", fileURL(filepath.Join(dir, "missing.json")), "no such file"},
		{"http", "http://example.com/schema.json", "only file: URLs"},
		{"another host", "file://example.com" + filepath.ToSlash(dir) + "/good.json", `a file on host "example.com"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := withinDeadline(t, 5*time.Second, func() error {
				_, err := load(tc.url)
				return err
			})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.url, "the error names the URL")
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "SECRET-CONTENT")
			assert.NotContains(t, err.Error(), "root:")
		})
	}
	data, err := load(fileURL(filepath.Join(dir, "good.json")))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type": "string", "maxLength": 3}`, string(data))
	_, err = os.Stat(outside)
	require.NoError(t, err, "the secret is there to be refused")
}

// TestDirLoaderInCompile checks DirLoader as Compile's Loader: a
// relative $ref to a file beside the schema compiles; a $ref to a file
// nobody asked for is an *Error at the $ref, naming the URL and the
// reason, and returns at once.
func TestDirLoaderInCompile(t *testing.T) {
	dir, _ := loaderDir(t)
	opts := Options{BaseURI: fileURL(filepath.Join(dir, "schema.json")), Loader: DirLoader(dir, 64)}
	schema := `{"type": "object", "properties": {"s": {"$ref": "good.json"}, "n": {"$ref": "sub/defs.json#/$defs/n"}}, "required": ["s", "n"]}`
	g, err := Compile([]byte(schema), opts)
	require.NoError(t, err)
	p, err := grammar.Compile(g)
	require.NoError(t, err)
	assert.True(t, acceptsText(p, `{"s": "abc", "n": 2}`))
	assert.False(t, acceptsText(p, `{"s": "abcd", "n": 2}`))
	assert.False(t, acceptsText(p, `{"s": "abc", "n": 0}`))

	for _, tc := range []struct{ ref, want string }{
		{"file:///dev/zero", "not under"},
		{"fifo.json", "not a regular file (a named pipe)"},
		{"escape.json", "escapes"},
		{"../secret.json", "not under"},
		{"/etc/passwd", "not under"},
		{"big.json", "more than the limit of 64"},
		{"notjson.json", "not JSON: line 1, column 1"},
	} {
		schema := `{"properties": {"a": {"$ref": "` + tc.ref + `"}}}`
		err := withinDeadline(t, 5*time.Second, func() error {
			_, err := Compile([]byte(schema), opts)
			return err
		})
		var e *Error
		require.True(t, errors.As(err, &e), "%s: %v", tc.ref, err)
		assert.Equal(t, "#/properties/a", e.Pointer, tc.ref)
		assert.Equal(t, "$ref", e.Keyword, tc.ref)
		assert.Contains(t, e.Msg, tc.want, tc.ref)
		assert.NotContains(t, e.Msg, "SECRET-CONTENT", tc.ref)
		assert.NotContains(t, e.Msg, "'r'", tc.ref)
	}
}
