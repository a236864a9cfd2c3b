package jsonschema

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/reins-go/reins/internal/fileread"
)

// DirLoader returns a Loader for $refs to schema files under dir (the
// schema file's own folder, or one the caller names). It reads a file:
// URL only when it names a regular file under dir of at most maxBytes
// bytes (maxBytes ≤ 0 means MaxSchemaBytes); symbolic links are followed
// only where they stay under dir. Anything else (another scheme, a path
// outside dir, a device such as /dev/zero, a named pipe, a directory, a
// larger file) is refused with the URL and the reason, never with the
// file's content, and without reading it: a FIFO is never waited on, a
// device never read.
//
// dir is resolved against the working directory when the Loader is
// called. The Loader is safe for concurrent use.
func DirLoader(dir string, maxBytes int64) Loader {
	if maxBytes <= 0 {
		maxBytes = MaxSchemaBytes
	}
	return func(ref string) ([]byte, error) {
		refuse := func(format string, args ...any) error {
			return fmt.Errorf("$ref %s refused: %s", ref, fmt.Sprintf(format, args...))
		}
		u, err := url.Parse(ref)
		if err != nil {
			return nil, refuse("not a URL")
		}
		if u.Scheme != "file" {
			return nil, refuse("only file: URLs are loaded (files under %s)", dir)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, refuse("a file on host %q", u.Host)
		}
		root, err := filepath.Abs(dir)
		if err != nil {
			return nil, refuse("the folder %s: %v", dir, err)
		}
		path := filepath.FromSlash(u.Path)
		if runtime.GOOS == "windows" && len(path) >= 3 && path[0] == '\\' && path[2] == ':' {
			path = path[1:] // file:///C:/x
		}
		rel, err := filepath.Rel(root, filepath.Clean(path))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, refuse("not under %s", root)
		}
		// os.Root resolves every component under root: a symbolic link
		// that leads out of it is an error, as ".." is.
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, refuse("the folder %s: %v", root, err)
		}
		defer r.Close()
		info, err := r.Stat(rel)
		if err != nil {
			return nil, refuse("%v", err)
		}
		if !info.Mode().IsRegular() {
			return nil, refuse("not a regular file (%s)", fileread.Kind(info.Mode()))
		}
		if info.Size() > maxBytes {
			return nil, refuse("the file is %d bytes, more than the limit of %d", info.Size(), maxBytes)
		}
		// Non-blocking, should it have become a FIFO since Stat.
		f, err := fileread.OpenIn(r, rel)
		if err != nil {
			return nil, refuse("%v", err)
		}
		defer f.Close()
		if now, err := f.Stat(); err != nil || !os.SameFile(info, now) {
			return nil, refuse("the file changed while it was opened")
		}
		data, err := fileread.ReadAll(f, "the file", maxBytes)
		if err != nil {
			return nil, refuse("%v", err)
		}
		return data, nil
	}
}
