//go:build unix

package env

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO is refused, not read (it was opened twice, by validation and by
// the run, and hung with no writer): the test writes a good table into
// it, which the reader must not take.
func TestReadFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.csv")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for a reader
		if err != nil {
			return
		}
		w.WriteString("a,y\n0,x\n1,z\n")
		w.Close()
	}()
	_, err := ParseDataset("csv:"+p+",lo=0,hi=1", 0)
	// Free the writer if the reader never opened the FIFO: opened for
	// reading and writing, a FIFO does not block (Linux, BSDs).
	if f, e := os.OpenFile(p, os.O_RDWR, 0); e == nil {
		<-done
		f.Close()
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a FIFO: %v, want ErrNotRegular", err)
	}
}
