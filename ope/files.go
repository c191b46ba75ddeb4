package ope

import (
	"fmt"
	"io"

	"github.com/dpbandit/dpbandit/internal/regfile"
)

// MaxLine is the longest line a log (a JSON line, or a CSV record with
// the newlines of its quoted fields) or a Dist file may have: reading
// one never holds more than that and the readers' buffers.
const MaxLine = 64 << 20

// MaxFile is the largest file ope reads whole: a Linear model, a
// Ledger.
const MaxFile = 64 << 20

// ErrNotRegular is a file that is not a regular file (a FIFO, a
// device, a socket or a directory; *regfile.NotRegularError): a log and
// a Dist file are read more than once (a FIFO gives its bytes once, and
// opening one blocks until a writer comes), and a device such as
// /dev/zero never ends.
var ErrNotRegular = regfile.ErrNotRegular

// errLineTooLong is a log's record longer than its Reader's limit.
var errLineTooLong = errorf("a line longer than the limit")

// recordLimit fails a read once more than max bytes were read since the
// last reset (a record's start, for the CSV reader, whose own buffer
// reads ahead by at most 4096 bytes).
type recordLimit struct {
	r      io.Reader
	n, max int
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errLineTooLong
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// MemoryError is a reward model (or a replayed algorithm) of Dim
// features over Arms actions whose state needs more than the limit, in
// bytes.
type MemoryError struct {
	Dim, Arms   int
	Need, Limit float64
}

func (e *MemoryError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *MemoryError) Message() string {
	return fmt.Sprintf("a model of %d features over %d actions needs about %.0f MiB (two %d x %d matrices and %d bytes an action), above the limit of %.0f MiB",
		e.Dim, e.Arms, e.Need/(1<<20), e.Dim, e.Dim, perAction, e.Limit/(1<<20))
}

// perAction bounds the bytes an evaluation holds per action: the
// target's probabilities and the action's sums, a few float64 each.
const perAction = 64

// CheckMemory refuses (*MemoryError) a model of dim features over arms
// actions whose two dim x dim matrices of float64 (a Gram matrix and
// its factor: 16 dim^2 bytes) and per-action state (64 bytes an action)
// exceed limit bytes; a limit of 0 is none.
func CheckMemory(dim, arms int, limit int64) error {
	need := 16*float64(dim)*float64(dim) + perAction*float64(arms)
	if limit > 0 && need > float64(limit) {
		return &MemoryError{Dim: dim, Arms: arms, Need: need, Limit: float64(limit)}
	}
	return nil
}
