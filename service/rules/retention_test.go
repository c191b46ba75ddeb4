package rules

import (
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/store"
)

// TestRetentionCutoff: now less the days, 0 once the days reach now's
// whole days since the epoch (no event is that old), never an overflow
// (150,000 days is past what a time.Duration holds).
func TestRetentionCutoff(t *testing.T) {
	const day = int64(24 * time.Hour)
	now := time.Unix(1e9, 0) // 11,574 days after the epoch
	for _, c := range []struct {
		days int
		want int64
	}{{1, 1e18 - day}, {11573, 1e18 - 11573*day}, {11574, 0}, {150000, 0}} {
		if got := RetentionCutoff(now, c.days); got != c.want {
			t.Errorf("%d days: %d, want %d", c.days, got, c.want)
		}
	}
}

// TestCovered: the operation before the last release, all of them in
// logging only mode once those before it are covered (or nothing was
// learned), and never an unfreed reward.
func TestCovered(t *testing.T) {
	for _, c := range []struct {
		name string
		c    Cover
		want int64
	}{
		{"no release", Cover{Seq: 50}, 0},
		{"a release", Cover{Released: 29, Seq: 50, Learned: true}, 29},
		{"unfreed", Cover{Released: 29, Seq: 50, Learned: true, Unfreed: store.Span{Lo: 20, Hi: 25}}, 19},
		{"logging only, released before", Cover{Released: 39, Seq: 50, LoggingOnly: 40, Learned: true}, 50},
		{"logging only, released just before", Cover{Released: 38, Seq: 50, LoggingOnly: 40, Learned: true}, 38},
		{"logging only, nothing learned", Cover{Seq: 50, LoggingOnly: 40}, 50},
		{"logging only, unfreed", Cover{Released: 39, Seq: 50, LoggingOnly: 40, Learned: true, Unfreed: store.Span{Lo: 45, Hi: 45}}, 44},
	} {
		if got := Covered(c.c); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSweep: marks at most one an hour; the span deleted runs to the
// newest mark older than the retention, no further than covered, from
// where the last one stopped.
func TestSweep(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	var s Sweep
	step := func(d time.Duration, seq, covered int64, want store.Span) {
		t.Helper()
		got, ok := s.Due(t0.Add(d), seq, 1, covered)
		if ok != !want.Empty() || got != want {
			t.Fatalf("at %v (seq %d, covered %d): %v %v, want %v", d, seq, covered, got, ok, want)
		}
	}
	step(0, 10, 100, store.Span{})                          // marks 10 at t0
	step(30*time.Minute, 20, 100, store.Span{})             // no mark
	step(time.Hour, 30, 100, store.Span{})                  // marks 30
	step(24*time.Hour-1, 40, 100, store.Span{})             // t0 is not a day old
	step(24*time.Hour, 40, 100, store.Span{Lo: 1, Hi: 10})  // it is
	step(25*time.Hour, 50, 25, store.Span{Lo: 11, Hi: 25})  // covered first
	step(25*time.Hour, 50, 100, store.Span{Lo: 26, Hi: 30}) // then the mark
	step(25*time.Hour, 50, 100, store.Span{})
	if len(s.marks) != 2 || s.marks[0].seq != 40 {
		t.Fatalf("marks kept %v, want those of 40 and 50", s.marks)
	}
}

// TestSweepMarks: past maxMarks the odd marks and the last are kept,
// so that the sweep deletes later, never sooner.
func TestSweepMarks(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	var s Sweep
	for i := range maxMarks + 1 {
		if _, ok := s.Due(t0.Add(time.Duration(i)*time.Hour), int64(i+1), 1e5, 1e9); ok {
			t.Fatal("a sweep within the retention deleted")
		}
	}
	if len(s.marks) != maxMarks/2+1 || s.marks[0].seq != 2 || s.marks[1].seq != 4 || s.marks[len(s.marks)-1].seq != maxMarks+1 {
		t.Fatalf("%d marks kept: first %v, last %v", len(s.marks), s.marks[:2], s.marks[len(s.marks)-1])
	}
}
