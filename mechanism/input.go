package mechanism

import (
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/noise"
)

// ErrInput is wrapped by every error that the mechanisms, and the
// policies and learners built on them (packages bandit, mab, contextual,
// linear, sparse and olo), return for input they refuse: a parameter
// outside its range, a setting they cannot use, a NaN or infinite value,
// an action outside the unit ball, a call out of order, a snapshot that
// is not theirs, a noise source that cannot draw (which wraps
// noise.ErrNoSource too). The message says what was refused. Errors that
// do not wrap it: a calibration's (*privacy.ParamError, a budget or
// sensitivity that package privacy refuses, returned as it made it), a
// failure of what they draw on (an entropy
// source), and numerical breakdowns (a Gram matrix no longer positive
// definite).
var ErrInput = liberr.ErrInput

// checkNoise is noise.Check, as an input error.
func checkNoise(nz noise.Noise) error {
	if err := noise.Check(nz); err != nil {
		return inputf("%w", err)
	}
	return nil
}
