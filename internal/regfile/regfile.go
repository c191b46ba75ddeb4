// Package regfile opens and reads the files dpbandit is given by its
// users: regular files only, never a FIFO, a device or a socket (which
// could block or never end), and within a stated size.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is a file that is not a regular file: a FIFO, a device,
// a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is a file larger than its reader's limit.
var ErrTooLarge = errors.New("file too large")

// NotRegularError is a file that is not a regular file (ErrNotRegular):
// Kind says what it is.
type NotRegularError struct {
	Path, Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file (which could block or never end): save what it holds to a file first", e.Path, e.Kind)
}

// Unwrap makes a NotRegularError an ErrNotRegular.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// Open opens a regular file for reading, and refuses anything else
// (*NotRegularError) without blocking: the file is opened non-blocking
// (a FIFO without a writer would block an ordinary open) and checked on
// its descriptor, so that it cannot be replaced between the check and
// the reads. Links are followed.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := info.Mode(); !m.IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Kind: Kind(m)}
	}
	return f, nil
}

// Kind names, with its article, the kind of a file mode that is not a
// regular file's.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// ReadAll reads the regular file at path (Open) whole, once, if it holds
// at most limit bytes; a larger one, or one that grows past limit while
// it is read, is refused with an error that wraps ErrTooLarge. Errors
// name the path.
func ReadAll(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := fmt.Errorf("%s: %w: larger than %d bytes", path, ErrTooLarge, limit)
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge
	}
	return b, nil
}
