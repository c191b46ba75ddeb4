package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Regular files are read within their limit; a device, a FIFO without a
// writer (which would block an ordinary open) and a folder are refused
// at once, and a file over the limit with ErrTooLarge.
func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadAll(path, 5); err != nil || string(b) != "12345" {
		t.Fatalf("ReadAll at its limit: %q, %v", b, err)
	}
	if _, err := ReadAll(path, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAll over its limit: %v, want ErrTooLarge", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{os.DevNull, "/dev/zero", fifo, dir} {
		var nr *NotRegularError
		if _, err := ReadAll(p, 1<<20); !errors.Is(err, ErrNotRegular) || !errors.As(err, &nr) || nr.Path != p {
			t.Errorf("%s: %v, want a NotRegularError", p, err)
		}
	}
}
