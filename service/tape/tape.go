// Package tape is an experiment's recorded randomness: the noise
// (noise.Noise, noise.Exact) and random source (rand.Source) the
// service's policies run on. Live, a Tape draws secure noise
// (noise.Secure) and operating-system randomness, and records every
// release and random word of the current operation, for the engine
// (service/engine) to persist before the operation's result is used.
// Replaying a stored history, it returns the recorded releases and
// words in order, checking that each release is asked with the recorded
// mechanism, scale and sensitivity: a release is drawn once, and a
// restart reloads it, never re-draws it.
//
// A Tape is not safe for concurrent use: the engine runs it under the
// experiment's lock.
package tape

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/service/store"
)

// ErrDiverged is returned when replaying an experiment's history does not
// reproduce what was stored (a release of another calibration, a
// decision of another arm): the history was written by another version
// of the algorithm, and the experiment is not served rather than served
// with fresh noise.
var ErrDiverged = errors.New("service: replaying the history does not reproduce it")

// A Tape is what the policies take: noise, exact noise, lattice noise
// (Discrete, which mechanism calibrates for) and a random source.
var _ interface {
	noise.Noise
	noise.Exact
	mrand.Source
	Discrete() bool
} = (*Tape)(nil)

// Tape is a policy's noise (noise.Noise, noise.Exact) and random source
// (rand.Source), recorded per operation and replayed in order (see the
// package's doc).
type Tape struct {
	sec noise.Secure
	src io.Reader

	releases []store.Release // to replay
	words    []uint64        // to replay
	rpos     int
	wpos     int

	// the current operation's records
	seq      int64
	arm      int
	now      int64
	newRel   []store.Release
	newWords []uint64
	err      error
}

// New returns a tape drawing from entropy (nil: crypto/rand's reader)
// with nothing to replay.
func New(entropy io.Reader) *Tape {
	if entropy == nil {
		entropy = rand.Reader
	}
	return &Tape{sec: noise.Secure{Rand: entropy}, src: entropy}
}

// Load sets the recorded releases and random words to replay, in order,
// before anything is drawn anew. The tape keeps the slices (it does not
// change them).
func (t *Tape) Load(releases []store.Release, words []uint64) {
	t.releases, t.words, t.rpos, t.wpos = releases, words, 0, 0
}

// Begin starts recording operation seq, decided in a plan of arm (-1:
// none), at now (Unix nanoseconds): it clears the previous operation's
// records and error.
func (t *Tape) Begin(seq int64, arm int, now int64) {
	t.seq, t.arm, t.now = seq, arm, now
	t.newRel, t.newWords, t.err = t.newRel[:0], t.newWords[:0], nil
}

// Replaying reports whether recorded values remain.
func (t *Tape) Replaying() bool { return t.rpos < len(t.releases) || t.wpos < len(t.words) }

// Finished returns, at the end of a replay, nil when the replay used
// every recorded release and random word and drew nothing anew; else
// ErrDiverged, saying how many were recorded, used and asked for more.
func (t *Tape) Finished() error {
	if !t.Replaying() && len(t.newRel) == 0 && len(t.newWords) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d releases and %d random words were stored, replay used %d and %d and asked %d and %d more",
		ErrDiverged, len(t.releases), len(t.words), t.rpos, t.wpos, len(t.newRel), len(t.newWords))
}

// Err returns the error of the current operation: a failing entropy
// source, or a replayed release asked with another mechanism, scale or
// sensitivity (ErrDiverged). Noise and words drawn after it are not to
// be used.
func (t *Tape) Err() error { return t.err }

// NewReleases returns the releases drawn anew since Begin, in order. The
// slice is the tape's: it is reused by the next Begin.
func (t *Tape) NewReleases() []store.Release { return t.newRel }

// NewWords returns the random words drawn anew since Begin, in order.
// The slice is the tape's: it is reused by the next Begin.
func (t *Tape) NewWords() []uint64 { return t.newWords }

// Released returns the number of releases the tape has given: those
// replayed plus those drawn anew since Begin. It grows by one with every
// release, replayed or live.
func (t *Tape) Released() int { return t.rpos + len(t.newRel) }

// Replayed returns how many of the loaded releases and words have been
// replayed.
func (t *Tape) Replayed() (releases, words int) { return t.rpos, t.wpos }

// Uint64 is the policy's random source: the next recorded word, or a
// word of the entropy source, recorded. A failing source sets Err.
func (t *Tape) Uint64() uint64 {
	if t.wpos < len(t.words) {
		t.wpos++
		return t.words[t.wpos-1]
	}
	var b [8]byte
	if _, err := io.ReadFull(t.src, b[:]); err != nil {
		t.err = fmt.Errorf("service: entropy: %w", err)
	}
	w := binary.LittleEndian.Uint64(b[:])
	t.newWords = append(t.newWords, w)
	return w
}

// release returns the next recorded release, checked, or draws and
// records a new one.
func (t *Tape) release(kind string, scale, sens float64, draw func() (float64, error)) (float64, error) {
	if t.rpos < len(t.releases) {
		r := t.releases[t.rpos]
		if r.Kind != kind || r.Scale != scale || r.Sensitivity != sens {
			t.err = fmt.Errorf("%w: release %d was %s(scale %v, sensitivity %v), replay asks %s(scale %v, sensitivity %v)",
				ErrDiverged, t.rpos, r.Kind, r.Scale, r.Sensitivity, kind, scale, sens)
			return 0, t.err
		}
		t.rpos++
		return r.Value, nil
	}
	v, err := draw()
	if err != nil {
		return 0, err
	}
	t.newRel = append(t.newRel, store.Release{Seq: t.seq, Kind: kind, Scale: scale, Sensitivity: sens, Value: v, Arm: t.arm, At: t.now})
	return v, nil
}

// Discrete reports that the noise is lattice noise (noise.Secure).
func (t *Tape) Discrete() bool { return true }

// AddGaussian releases x + N(0, sigma^2).
func (t *Tape) AddGaussian(v, sigma, sens float64) (float64, error) {
	return t.release("gaussian", sigma, sens, func() (float64, error) { return t.sec.AddGaussian(v, sigma, sens) })
}

// AddLaplace releases x + Lap(scale).
func (t *Tape) AddLaplace(v, scale, sens float64) (float64, error) {
	return t.release("laplace", scale, sens, func() (float64, error) { return t.sec.AddLaplace(v, scale, sens) })
}

// AddGaussianRat releases x + N(0, sigma^2) from the exact statistic.
func (t *Tape) AddGaussianRat(x *big.Rat, sigma, sens float64) (float64, error) {
	return t.release("gaussian", sigma, sens, func() (float64, error) { return t.sec.AddGaussianRat(x, sigma, sens) })
}

// AddLaplaceRat releases x + Lap(scale) from the exact statistic.
func (t *Tape) AddLaplaceRat(x *big.Rat, scale, sens float64) (float64, error) {
	return t.release("laplace", scale, sens, func() (float64, error) { return t.sec.AddLaplaceRat(x, scale, sens) })
}
