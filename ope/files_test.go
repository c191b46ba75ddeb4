package ope

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fifo makes a named pipe without a writer: opening it for reading the
// ordinary way blocks until one comes.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	return p
}

// Every file ope reads is a regular file: a FIFO (which a second pass
// cannot read again, and whose open blocks without a writer) or a
// device (/dev/zero never ends) is refused with ErrNotRegular, for a
// dist: target, a linear model and a ledger, without blocking.
func TestFilesMustBeRegular(t *testing.T) {
	for _, path := range []string{fifo(t), "/dev/zero"} {
		for _, spec := range []string{"dist:" + path, "linear:" + path} {
			if _, err := ParsePolicy(spec); !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", spec, err)
			}
		}
		if _, err := (Ledger{Path: path}).Read(); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ledger %s: %v, want ErrNotRegular", path, err)
		}
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// zeros is an endless stream of zero bytes, as /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A log's line (JSON) or record (CSV, whose quoted fields may span lines)
// longer than the limit is a LogError at its line, read no further than
// the limit and the readers' buffers: an endless line does not grow the
// memory without bound.
func TestLogLineLimit(t *testing.T) {
	const limit = 1 << 12
	for name, head := range map[string]string{
		"csv, no newline":                "",
		"csv, a quoted field over lines": "action,reward,pscore\n0,1,0.5\n\"",
		"json":                           `{"action":0,"reward":1,"pscore":0.5}` + "\n" + `{"context":[`,
	} {
		c := &countingReader{r: io.MultiReader(strings.NewReader(head), zeros{})}
		var err error
		rd, err := newReader(c, 2, Reading{}, limit)
		for err == nil {
			_, err = rd.Next()
		}
		var le *LogError
		if !errors.As(err, &le) || !strings.Contains(le.Reason, "longer than") {
			t.Errorf("%s: %v, want a LogError on the line's length", name, err)
		}
		if c.n > limit+1<<17 {
			t.Errorf("%s: read %d bytes for a limit of %d", name, c.n, limit)
		}
	}
}

// The reward model's memory, 16 d^2 bytes for d features, and 64 bytes
// an action, are checked against Options.MaxMemory before they are
// allocated: a wide context or 2e9 actions are a MemoryError naming the
// need, not a panic or an out-of-memory crash.
func TestModelMemory(t *testing.T) {
	line := `{"action":0,"reward":1,"pscore":0.5,"context":[` + strings.Repeat("0,", 3000) + `0]}` + "\n"
	_, err := Evaluate(opener([]byte(line)), Uniform{}, Options{Arms: 2, MaxMemory: 64 << 20})
	var me *MemoryError
	if !errors.As(err, &me) || me.Dim != 2*3002 || me.Need < 16*float64(me.Dim)*float64(me.Dim) {
		t.Errorf("a 3001-dimensional context in 64 MiB: %v, want a MemoryError", err)
	}
	// Two billion actions: their probabilities alone would take 16 GB.
	log := "action,reward,pscore\n0,1,0.5\n"
	if _, err := Evaluate(opener([]byte(log)), Uniform{}, Options{Arms: 2e9, MaxMemory: 1 << 30}); !errors.As(err, &me) || me.Arms != 2e9 {
		t.Errorf("2e9 actions in 1 GiB: %v, want a MemoryError", err)
	}
}
