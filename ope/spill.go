package ope

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
)

// maxSpillNumbers bounds the numbers of an event that EvaluateAll keeps
// in its spill file: an event of more (a decision set of hashed
// features: K 2^b numbers) is cheaper to decode again from the log than
// to write and read back.
const maxSpillNumbers = 64

// spill is a temporary file of the first pass's events, in binary, that
// the second pass reads back instead of decoding the log again: the
// log is decoded once. Each event is its line, record and action (int64),
// its reward (clipped as the first pass read it) and pscore, a byte
// saying whether action_prob follows, then its context's numbers and
// action_prob's, as float64 bits, little-endian. The events' shape
// (nx numbers of a vector, or k vectors of c numbers; k actions) is the
// first event's, which scan holds every event to.
type spill struct {
	f         *os.File
	w         *bufio.Writer
	nx, k, c  int
	sets      bool // the events hold decision sets (of k vectors of c numbers, c possibly 0)
	buf       []byte
	err       error // the first write error: the spill is then abandoned
	x, flat   []float64
	set       [][]float64
	probs     []float64
	remaining int
}

// newSpill creates the spill for events shaped as e in a log of k
// actions, or returns nil when they are too large to spill or no
// temporary file can be made (the second pass then decodes the log).
func newSpill(e *Event, k int) *spill {
	s := &spill{nx: len(e.X), k: k, sets: e.Actions != nil}
	if s.sets {
		s.c = len(e.Actions[0])
	}
	if s.nx+len(e.Actions)*s.c+k > maxSpillNumbers {
		return nil
	}
	f, err := os.CreateTemp("", "dpbandit-evaluate-*.bin")
	if err != nil {
		return nil
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<16)
	return s
}

// close removes the spill's file.
func (s *spill) close() {
	if s != nil {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

func (s *spill) putF(x float64) { s.buf = binary.LittleEndian.AppendUint64(s.buf, math.Float64bits(x)) }

// write appends e.
func (s *spill) write(e *Event) {
	if s.err != nil {
		return
	}
	s.buf = s.buf[:0]
	for _, v := range []int{e.Line, e.Record, e.Action} {
		s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(v))
	}
	s.putF(e.Reward)
	s.putF(e.PScore)
	has := byte(0)
	if e.Probs != nil {
		has = 1
	}
	s.buf = append(s.buf, has)
	for _, v := range e.X {
		s.putF(v)
	}
	for _, a := range e.Actions {
		for _, v := range a {
			s.putF(v)
		}
	}
	for _, v := range e.Probs {
		s.putF(v)
	}
	_, s.err = s.w.Write(s.buf)
	s.remaining++
}

// replay reads the events back, in order, to f, as scan would have
// given them (with the Reader's buffers reused).
func (s *spill) replay(k int, f func(e *Event, k int) error) error {
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return s.err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(s.f, 1<<16)
	s.x = make([]float64, s.nx)
	if s.sets {
		s.flat = make([]float64, s.k*s.c)
		s.set = make([][]float64, s.k)
		for a := range s.set {
			s.set[a] = s.flat[a*s.c : (a+1)*s.c : (a+1)*s.c]
		}
	}
	s.probs = make([]float64, s.k)
	head := make([]byte, 5*8+1)
	var e Event
	for ; s.remaining > 0; s.remaining-- {
		if _, err := io.ReadFull(r, head); err != nil {
			return err
		}
		u := func(i int) uint64 { return binary.LittleEndian.Uint64(head[8*i:]) }
		e = Event{Line: int(u(0)), Record: int(u(1)), Action: int(u(2)), Reward: math.Float64frombits(u(3)), PScore: math.Float64frombits(u(4))}
		if err := s.floats(r, s.x); err != nil {
			return err
		}
		if s.nx > 0 {
			e.X = s.x
		}
		if s.sets {
			if err := s.floats(r, s.flat); err != nil {
				return err
			}
			e.Actions = s.set
		}
		if head[40] == 1 {
			if err := s.floats(r, s.probs); err != nil {
				return err
			}
			e.Probs = s.probs
		}
		if err := f(&e, k); err != nil {
			return lineError(&e, err)
		}
	}
	return nil
}

// floats reads len(dst) numbers.
func (s *spill) floats(r *bufio.Reader, dst []float64) error {
	need := 8 * len(dst)
	if cap(s.buf) < need {
		s.buf = make([]byte, need)
	}
	b := s.buf[:need]
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
}

// lineError is scan's reading of an error of f on event e: the model's
// memory as it is, any other at e's line.
func lineError(e *Event, err error) error {
	if me := (*MemoryError)(nil); errors.As(err, &me) {
		return err
	}
	return &LogError{Line: e.Line, Reason: err.Error()}
}
