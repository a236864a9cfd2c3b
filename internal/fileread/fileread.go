// Package fileread opens and reads files a user named, with the checks
// every such read needs: the file must be a regular file (a named pipe
// would block its reader forever, a device would never end), and what is
// read is bounded.
package fileread

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens the regular file at path for reading. It does not block on
// a named pipe: a path that is not a regular file is an error saying
// what it is.
func Open(path string) (*os.File, error) {
	if path == "" {
		return nil, fmt.Errorf("empty file name")
	}
	return regular(os.OpenFile(path, os.O_RDONLY|oNonblock, 0))
}

// OpenIn is Open for a name inside root: no path through it leaves the
// root's folder, symbolic links included.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	return regular(root.OpenFile(name, os.O_RDONLY|oNonblock, 0))
}

// OpenWrite opens the regular file at path for reading and writing,
// creating it when it does not exist. Like Open, it does not block on a
// named pipe, and a path that is not a regular file (a device such as
// /dev/zero never ends) is an error saying what it is.
func OpenWrite(path string) (*os.File, error) {
	if path == "" {
		return nil, fmt.Errorf("empty file name")
	}
	return regular(os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNonblock, 0o644))
}

// regular returns f when it is a regular file, else closes it.
func regular(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", f.Name(), Kind(st.Mode()))
	}
	return f, nil
}

// Read reads the regular file at path, of at most limit bytes.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to its end, at most limit bytes; name says what r is
// in the error for more.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return b, nil
}

// Kind names a file mode's type, for errors.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}
