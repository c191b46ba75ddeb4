package ope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Release is a differentially private release of a clipped IPS estimate.
type Release struct {
	// Key identifies what was released: the log's SHA-256, the target
	// policy, the cap, the reward range and the budget.
	Key       string  `json:"key"`
	Estimator string  `json:"estimator"`
	Value     float64 `json:"value"`
	Mechanism string  `json:"mechanism"` // "gaussian" or "laplace"
	Scale     float64 `json:"noise_scale"`
	// Sensitivity is the estimate's sensitivity to one logged event
	// (replaced by another; the number of events is public):
	// Clip (max(hi, 0) - min(lo, 0)) / n.
	Sensitivity float64        `json:"sensitivity"`
	Budget      privacy.Budget `json:"privacy"`
	Events      int            `json:"events"`
}

// ErrNoClip is a private release asked for without a weight cap: the
// weights pi/pscore are bounded only by the smallest pscore, a property
// of the data that cannot calibrate the noise.
var ErrNoClip = errors.New("ope: a private release needs a weight cap (--clip M): the noise is calibrated to it")

// PrivateIPS releases res's IPS estimate under the budget: one event
// changes each term w r by at most Clip (max(hi, 0) - min(lo, 0)), with
// weights capped at o.Clip and rewards clipped to o.Rewards (Evaluate
// does both), so the mean changes by that over n; Gaussian noise for a
// zCDP, (eps, delta) or Renyi budget, Laplace for pure eps-DP, from
// package mechanism. Only IPS is released: SNIPS divides by the weights'
// sum and DM and DR depend on a model fit on every event, whose
// sensitivities this bound does not cover.
func PrivateIPS(res *Result, o Options, b privacy.Budget, nz noise.Noise) (Release, error) {
	if o.Clip <= 0 {
		return Release{}, ErrNoClip
	}
	if o.Rewards == nil {
		return Release{}, errors.New("ope: a private release needs the declared reward range")
	}
	width := o.Clip * (max(o.Rewards.Hi, 0) - min(o.Rewards.Lo, 0))
	sens := width / float64(res.Events)
	rel := Release{Estimator: "ips", Sensitivity: sens, Budget: b, Events: res.Events}
	mean := res.ipsSum / float64(res.Events)
	var err error
	if b.Notion == privacy.Pure {
		var m mechanism.Laplace
		if m, err = mechanism.NewLaplace(b, sens, nz); err == nil {
			rel.Mechanism, rel.Scale = "laplace", m.Scale()
			rel.Value, err = m.Release(mean)
		}
	} else {
		var m mechanism.Gaussian
		if m, err = mechanism.NewGaussian(b, sens, nz); err == nil {
			rel.Mechanism, rel.Scale = "gaussian", m.Sigma()
			rel.Value, err = m.Release(mean)
		}
	}
	return rel, err
}

// LogDigest returns the SHA-256 of a log, hex-encoded.
func LogDigest(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReleaseOnce returns the release recorded under key in the ledger file
// at path, or draws it, records it and returns it: a private estimate of
// a log is released once, and asking again (after a crash, from another
// process) returns the same value without spending the budget again. The
// ledger is locked (PATH.lock) while it is read and written; reused reports whether
// the release was already there.
func ReleaseOnce(path, key string, draw func() (Release, error)) (rel Release, reused bool, err error) {
	// The lock is on a file of its own: the ledger is replaced by a
	// rename, and a lock on its old inode would guard nothing.
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return Release{}, false, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Release{}, false, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	var ledger []Release
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Release{}, false, err
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &ledger); err != nil {
			return Release{}, false, fmt.Errorf("ope: release ledger %s: %v", path, err)
		}
	}
	for _, r := range ledger {
		if r.Key == key {
			return r, true, nil
		}
	}
	if rel, err = draw(); err != nil {
		return Release{}, false, err
	}
	rel.Key = key
	ledger = append(ledger, rel)
	out, err := json.MarshalIndent(ledger, "", "  ")
	if err != nil {
		return Release{}, false, err
	}
	// Write beside and rename: a crash leaves the old ledger or the new.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return Release{}, false, err
	}
	if err := syncFile(tmp); err != nil {
		return Release{}, false, err
	}
	return rel, false, os.Rename(tmp, path)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
