package rank

import (
	"context"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Model is a Personalizer experiment's model export (its model GET): the
// learner's released estimate only, never a raw sum or a reward.
type Model struct {
	// Algorithm is the learner (a catalogue spec), HashBits the
	// features' hashing (docs/personalizer.md: how features become
	// vectors), Dim the estimate's dimension 2^HashBits.
	Algorithm string `json:"algorithm"`
	HashBits  int    `json:"hash_bits"`
	Dim       int    `json:"dim"`
	// Episodes counts the learner's re-estimations since it started
	// (0: Theta is 0).
	Episodes int64 `json:"episodes"`
	// Theta is theta~ of the last re-estimation: V_tau^-1 times the
	// released noisy reward statistics (contextual.OFUL.Estimate), what
	// the learner ranks by; an action's estimated reward is its
	// vector's inner product with it.
	Theta []float64 `json:"theta"`
	// Created is when the learner started (the experiment's creation or
	// its last reset); Modified its last release since (Created if none).
	Created  time.Time `json:"created"`
	Modified time.Time `json:"modified"`
}

// Learner is an experiment whose learner's model is read (an
// *engine.Experiment): Learner runs its function under the experiment's
// lock with the learner, its settings and its last releases, and
// returns what to Wait for before the model is answered.
type Learner interface {
	Learner(f func(learner any, eff define.Definition, cur define.Current, recent []store.Release)) (chan struct{}, error)
	Wait(ctx context.Context, durable []chan struct{}) error
}

// estimator is a learner that exports its released estimate.
type estimator interface{ Estimate() []float64 }

// Export returns x's model export, once every release it reflects is
// durable: NotFound on an experiment of another surface or a learner
// that exports no estimate.
func Export(ctx context.Context, x Learner) (Model, error) {
	var m Model
	var err error
	last, stopped := x.Learner(func(learner any, eff define.Definition, cur define.Current, recent []store.Release) {
		if eff.Surface != define.SurfacePersonalizer {
			err = fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", eff.ID)
			return
		}
		est, ok := learner.(estimator)
		if !ok {
			err = fault.Errorf(fault.NotFound, "the learner %s exports no estimate", eff.Algorithm)
			return
		}
		m = Model{Algorithm: eff.Algorithm, HashBits: eff.HashBits, Dim: eff.Dim, Theta: est.Estimate()}
		if ep, ok := learner.(bandit.Episodic); ok {
			m.Episodes = ep.Episodes()
		}
		m.Created, m.Modified = times(cur, recent)
	})
	switch {
	case stopped != nil:
		return Model{}, stopped
	case err != nil:
		return Model{}, err
	case last != nil:
		if err := x.Wait(ctx, []chan struct{}{last}); err != nil {
			return Model{}, err
		}
	}
	return m, nil
}

// Estimate returns the learner's released estimate theta (Export's
// Theta), once every release it reflects is durable: NotFound for a
// learner that exports none.
func Estimate(ctx context.Context, x Learner) ([]float64, error) {
	m, err := Export(ctx, x)
	return m.Theta, err
}

// ModelTimes returns when x's learner started (creation or reset) and
// when it last released since (model/properties).
func ModelTimes(x Learner) (created, modified time.Time) {
	x.Learner(func(_ any, _ define.Definition, cur define.Current, recent []store.Release) {
		created, modified = times(cur, recent)
	})
	return created, modified
}

// times returns when the learner of settings cur started and when it
// last released (its start if it has not), of the last releases recent.
func times(cur define.Current, recent []store.Release) (created, modified time.Time) {
	c := cur.ModelCreated
	mod := c
	if n := len(recent); n > 0 && recent[n-1].Seq > cur.LastReset {
		mod = max(mod, recent[n-1].At)
	}
	return time.Unix(0, c).UTC(), time.Unix(0, mod).UTC()
}
