package tape

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/service/store"
)

// stream is a deterministic entropy source of n bytes.
func stream(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// errBroken is the failing entropy source's error.
var errBroken = errors.New("broken entropy")

// broken is an entropy source that always fails.
type broken struct{}

func (broken) Read([]byte) (int, error) { return 0, errBroken }

// live runs one operation on a fresh tape over buf: two words, then a
// Gaussian, a Laplace and an exact Gaussian release, and returns the tape.
func live(t *testing.T, buf []byte) (*Tape, []float64) {
	t.Helper()
	tp := New(bytes.NewReader(buf))
	tp.Begin(7, 2, 1234)
	tp.Uint64()
	tp.Uint64()
	g, err := tp.AddGaussian(0.5, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tp.AddLaplace(-1, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tp.AddGaussianRat(big.NewRat(1, 3), 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	return tp, []float64{g, l, r}
}

// TestLiveDrawsRecorded: live, the words are the entropy's bytes (little
// endian) and the releases are noise.Secure's on the bytes that follow,
// each recorded with its operation, plan, time and calibration.
func TestLiveDrawsRecorded(t *testing.T) {
	buf := stream(1 << 16)
	tp, vals := live(t, buf)
	words := []uint64{binary.LittleEndian.Uint64(buf[0:8]), binary.LittleEndian.Uint64(buf[8:16])}
	if got := tp.NewWords(); !slices.Equal(got, words) {
		t.Fatalf("words %v, want %v", got, words)
	}
	sec := noise.Secure{Rand: bytes.NewReader(buf[16:])}
	g, _ := sec.AddGaussian(0.5, 3, 1)
	l, _ := sec.AddLaplace(-1, 2, 0.5)
	r, _ := sec.AddGaussianRat(big.NewRat(1, 3), 4, 2)
	if want := []float64{g, l, r}; !slices.Equal(vals, want) {
		t.Fatalf("released %v, noise.Secure on the same bytes gives %v", vals, want)
	}
	want := []store.Release{
		{Seq: 7, Kind: "gaussian", Scale: 3, Sensitivity: 1, Value: g, Arm: 2, At: 1234},
		{Seq: 7, Kind: "laplace", Scale: 2, Sensitivity: 0.5, Value: l, Arm: 2, At: 1234},
		{Seq: 7, Kind: "gaussian", Scale: 4, Sensitivity: 2, Value: r, Arm: 2, At: 1234},
	}
	if got := tp.NewReleases(); !slices.Equal(got, want) {
		t.Fatalf("releases %+v, want %+v", got, want)
	}
	if tp.Released() != 3 || tp.Replaying() {
		t.Fatalf("released %d, replaying %v: want 3, false", tp.Released(), tp.Replaying())
	}
	// The next operation starts with no records of its own.
	tp.Begin(8, -1, 0)
	if len(tp.NewReleases())+len(tp.NewWords()) != 0 || tp.Released() != 0 {
		t.Fatalf("after Begin: %d releases, %d words, released %d", len(tp.NewReleases()), len(tp.NewWords()), tp.Released())
	}
}

// TestReplayReturnsRecorded: a tape loaded with an operation's records
// returns them in order without reading its entropy (which fails here),
// and records nothing anew.
func TestReplayReturnsRecorded(t *testing.T) {
	rec, vals := live(t, stream(1<<16))
	rels, words := slices.Clone(rec.NewReleases()), slices.Clone(rec.NewWords())
	tp := New(broken{})
	tp.Load(rels, words)
	tp.Begin(7, 2, 1234)
	if !tp.Replaying() {
		t.Fatal("a loaded tape is not replaying")
	}
	for i, w := range words {
		if got := tp.Uint64(); got != w {
			t.Fatalf("word %d: %d, want %d", i, got, w)
		}
	}
	g, err1 := tp.AddGaussian(99, 3, 1)
	if tp.Released() != 1 {
		t.Fatalf("released %d after one replayed release", tp.Released())
	}
	l, err2 := tp.AddLaplace(99, 2, 0.5)
	r, err3 := tp.AddGaussianRat(big.NewRat(99, 1), 4, 2)
	if err := errors.Join(err1, err2, err3, tp.Err()); err != nil {
		t.Fatal(err)
	}
	if got := []float64{g, l, r}; !slices.Equal(got, vals) {
		t.Fatalf("replayed %v, recorded %v", got, vals)
	}
	if len(tp.NewReleases())+len(tp.NewWords()) != 0 {
		t.Fatalf("replay recorded %d releases and %d words", len(tp.NewReleases()), len(tp.NewWords()))
	}
	if rp, wp := tp.Replayed(); rp != 3 || wp != 2 || tp.Replaying() || tp.Released() != 3 {
		t.Fatalf("replayed %d, %d (replaying %v, released %d), want 3, 2 (false, 3)", rp, wp, tp.Replaying(), tp.Released())
	}
	// Past the records, the tape draws anew: here from the failing source.
	tp.Uint64()
	if !errors.Is(tp.Err(), errBroken) {
		t.Fatalf("a word past the records from a failing source: %v", tp.Err())
	}
}

// TestReplayOtherCalibrationDiverges: a recorded release asked with
// another mechanism, scale or sensitivity is ErrDiverged, from the call
// and from Err, and the record is not consumed.
func TestReplayOtherCalibrationDiverges(t *testing.T) {
	rel := []store.Release{{Seq: 1, Kind: "gaussian", Scale: 3, Sensitivity: 1, Value: 0.25}}
	for _, c := range []struct {
		name string
		ask  func(*Tape) (float64, error)
	}{
		{"mechanism", func(tp *Tape) (float64, error) { return tp.AddLaplace(0, 3, 1) }},
		{"exact mechanism", func(tp *Tape) (float64, error) { return tp.AddLaplaceRat(new(big.Rat), 3, 1) }},
		{"scale", func(tp *Tape) (float64, error) { return tp.AddGaussian(0, 3.000001, 1) }},
		{"sensitivity", func(tp *Tape) (float64, error) { return tp.AddGaussianRat(new(big.Rat), 3, 2) }},
	} {
		tp := New(bytes.NewReader(stream(1 << 12)))
		tp.Load(rel, nil)
		tp.Begin(1, -1, 0)
		if _, err := c.ask(tp); !errors.Is(err, ErrDiverged) {
			t.Errorf("%s: %v, want ErrDiverged", c.name, err)
		}
		if !errors.Is(tp.Err(), ErrDiverged) {
			t.Errorf("%s: Err() = %v, want ErrDiverged", c.name, tp.Err())
		}
		if rp, _ := tp.Replayed(); rp != 0 || len(tp.NewReleases()) != 0 {
			t.Errorf("%s: replayed %d, drew %d anew", c.name, rp, len(tp.NewReleases()))
		}
	}
	// The same calibration replays.
	tp := New(broken{})
	tp.Load(rel, nil)
	if v, err := tp.AddGaussian(0, 3, 1); err != nil || v != 0.25 {
		t.Fatalf("same calibration: %v, %v", v, err)
	}
}

// TestFailingEntropySetsErr: a word drawn from a failing source sets
// Err (wrapping the source's error) until the next Begin; a release
// drawn from it fails.
func TestFailingEntropySetsErr(t *testing.T) {
	tp := New(broken{})
	tp.Begin(1, -1, 0)
	if tp.Err() != nil {
		t.Fatalf("Err before any draw: %v", tp.Err())
	}
	tp.Uint64()
	if !errors.Is(tp.Err(), errBroken) {
		t.Fatalf("Err() = %v, want the source's error", tp.Err())
	}
	tp.Begin(2, -1, 0)
	if tp.Err() != nil {
		t.Fatalf("Err after Begin: %v", tp.Err())
	}
	if _, err := tp.AddGaussian(0, 1, 1); err == nil || len(tp.NewReleases()) != 0 {
		t.Fatalf("a release from a failing source: %v, %d recorded", err, len(tp.NewReleases()))
	}
	var short io.Reader = bytes.NewReader(make([]byte, 4))
	tp = New(short)
	tp.Uint64()
	if !errors.Is(tp.Err(), io.ErrUnexpectedEOF) {
		t.Fatalf("a short source: Err() = %v, want io.ErrUnexpectedEOF", tp.Err())
	}
}

// TestFinishedOnlyWhenTheRecordsAreUsedUp: a replay is finished once it
// used every recorded release and word and drew nothing anew; one that
// leaves a record unused, or asks for one more, is ErrDiverged.
func TestFinishedOnlyWhenTheRecordsAreUsedUp(t *testing.T) {
	rec, _ := live(t, stream(1<<16))
	rels, words := slices.Clone(rec.NewReleases()), slices.Clone(rec.NewWords())
	// replay asks, as live did, n words and then the releases (all: the
	// three), and one word more if extra.
	replay := func(n int, all, extra bool) *Tape {
		tp := New(bytes.NewReader(stream(1 << 10)))
		tp.Load(rels, words)
		tp.Begin(7, 2, 1234)
		for range n {
			tp.Uint64()
		}
		if all {
			tp.AddGaussian(0.5, 3, 1)
			tp.AddLaplace(-1, 2, 0.5)
			tp.AddGaussianRat(big.NewRat(1, 3), 4, 2)
		}
		if extra {
			tp.Uint64()
		}
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		return tp
	}
	if err := New(nil).Finished(); err != nil {
		t.Fatalf("a tape with nothing recorded or drawn: %v", err)
	}
	if err := replay(len(words), true, false).Finished(); err != nil {
		t.Fatalf("every record used: %v", err)
	}
	if err := replay(len(words), false, false).Finished(); !errors.Is(err, ErrDiverged) {
		t.Fatalf("the releases unused: %v, want ErrDiverged", err)
	}
	if err := replay(1, false, false).Finished(); !errors.Is(err, ErrDiverged) {
		t.Fatalf("a word unused: %v, want ErrDiverged", err)
	}
	if err := replay(len(words), true, true).Finished(); !errors.Is(err, ErrDiverged) {
		t.Fatalf("a word asked past the records: %v, want ErrDiverged", err)
	}
}
