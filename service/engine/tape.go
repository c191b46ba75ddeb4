package engine

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/service/store"
)

// ErrDiverged is returned when replaying an experiment's history does not
// reproduce what was stored (a release of another calibration, a
// decision of another arm): the history was written by another version
// of the algorithm, and the experiment is not served rather than served
// with fresh noise.
var ErrDiverged = errors.New("service: replaying the history does not reproduce it")

// tape is a policy's noise (noise.Noise, noise.Exact) and random source
// (rand.Source). Live, it draws secure noise (noise.Secure) and
// operating-system randomness, and records every release and random word
// of the current operation, for the caller to persist before the
// operation's result is used. Replaying, it returns the recorded releases
// and words in order, checking that each release is asked with the
// recorded mechanism, scale and sensitivity: a release is drawn once, and
// a restart reloads it, never re-draws it.
type tape struct {
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

func newTape(entropy io.Reader) *tape {
	if entropy == nil {
		entropy = rand.Reader
	}
	return &tape{sec: noise.Secure{Rand: entropy}, src: entropy}
}

// begin starts recording operation seq, decided in a plan of arm.
func (t *tape) begin(seq int64, arm int, now int64) {
	t.seq, t.arm, t.now = seq, arm, now
	t.newRel, t.newWords, t.err = t.newRel[:0], t.newWords[:0], nil
}

// replaying reports whether recorded values remain.
func (t *tape) replaying() bool { return t.rpos < len(t.releases) || t.wpos < len(t.words) }

// Uint64 is the policy's random source.
func (t *tape) Uint64() uint64 {
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
func (t *tape) release(kind string, scale, sens float64, draw func() (float64, error)) (float64, error) {
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
func (t *tape) Discrete() bool { return true }

// AddGaussian releases x + N(0, sigma^2).
func (t *tape) AddGaussian(v, sigma, sens float64) (float64, error) {
	return t.release("gaussian", sigma, sens, func() (float64, error) { return t.sec.AddGaussian(v, sigma, sens) })
}

// AddLaplace releases x + Lap(scale).
func (t *tape) AddLaplace(v, scale, sens float64) (float64, error) {
	return t.release("laplace", scale, sens, func() (float64, error) { return t.sec.AddLaplace(v, scale, sens) })
}

// AddGaussianRat releases x + N(0, sigma^2) from the exact statistic.
func (t *tape) AddGaussianRat(x *big.Rat, sigma, sens float64) (float64, error) {
	return t.release("gaussian", sigma, sens, func() (float64, error) { return t.sec.AddGaussianRat(x, sigma, sens) })
}

// AddLaplaceRat releases x + Lap(scale) from the exact statistic.
func (t *tape) AddLaplaceRat(x *big.Rat, scale, sens float64) (float64, error) {
	return t.release("laplace", scale, sens, func() (float64, error) { return t.sec.AddLaplaceRat(x, scale, sens) })
}
