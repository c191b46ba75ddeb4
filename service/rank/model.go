package rank

import (
	"context"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
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
// *engine.Experiment): Learned reads it under the experiment's lock
// (engine.Experiment.Learned) and returns what to Wait for before the
// model is answered.
type Learner interface {
	Learned() (engine.Learned, chan struct{}, error)
	Wait(ctx context.Context, durable ...chan struct{}) error
}

// Export returns x's model export, once every release it reflects is
// durable: NotFound on an experiment of another surface or a learner
// that exports no estimate; a stopped experiment answers its error.
func Export(ctx context.Context, x Learner) (Model, error) {
	l, last, err := x.Learned()
	switch {
	case err != nil:
		return Model{}, err
	case l.Def.Surface != define.SurfacePersonalizer:
		return Model{}, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", l.Def.ID)
	case l.Estimate == nil:
		return Model{}, fault.Errorf(fault.NotFound, "the learner %s exports no estimate", l.Def.Algorithm)
	}
	m := Model{Algorithm: l.Def.Algorithm, HashBits: l.Def.HashBits, Dim: l.Def.Dim, Theta: l.Estimate, Episodes: l.Episodes}
	m.Created, m.Modified = times(l.Cur, l.Last)
	if err := x.Wait(ctx, last); err != nil {
		return Model{}, err
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
// when it last released since (model/properties). They are read of its
// settings and releases, never of its learner: a stopped experiment
// answers them too, as the API did before the engine's split (its error
// is not the answer's; Export's is).
func ModelTimes(x Learner) (created, modified time.Time) {
	l, _, _ := x.Learned()
	return times(l.Cur, l.Last)
}

// times returns when the learner of settings cur started and when it
// last released (its start if it has not), last its last release (Seq
// 0: none).
func times(cur define.Current, last store.Release) (created, modified time.Time) {
	c := cur.ModelCreated
	mod := c
	if last.Seq > cur.LastReset {
		mod = max(mod, last.At)
	}
	return time.Unix(0, c).UTC(), time.Unix(0, mod).UTC()
}
