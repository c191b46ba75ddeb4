package engine

import (
	"context"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
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

// estimator is a learner that exports its released estimate.
type estimator interface{ Estimate() []float64 }

// Model returns the experiment's model export, once every release it
// reflects is durable.
func (x *Experiment) Model(ctx context.Context) (Model, error) {
	m, last, err := x.model()
	if err == nil && last != nil {
		err = x.env.Writer.Wait(ctx, last)
	}
	return m, err
}

func (x *Experiment) model() (Model, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return Model{}, nil, x.stopped()
	}
	if x.def.Surface != define.SurfacePersonalizer {
		return Model{}, nil, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", x.def.ID)
	}
	est, ok := x.pol.Policy().(estimator)
	if !ok {
		return Model{}, nil, fault.Errorf(fault.NotFound, "the learner %s exports no estimate", x.set.eff.Algorithm)
	}
	m := Model{Algorithm: x.set.eff.Algorithm, HashBits: x.def.HashBits, Dim: x.def.Dim, Theta: est.Estimate()}
	if ep, ok := x.pol.Policy().(bandit.Episodic); ok {
		m.Episodes = ep.Episodes()
	}
	m.Created, m.Modified = x.modelTimes()
	return m, x.last, nil
}

// modelTimes returns when the learner started and when it last released
// (its start if it has not). The caller holds x.mu.
func (x *Experiment) modelTimes() (created, modified time.Time) {
	c := x.set.cur.ModelCreated
	mod := c
	if n := len(x.recent); n > 0 && x.recent[n-1].Seq > x.set.cur.LastReset {
		mod = max(mod, x.recent[n-1].At)
	}
	return time.Unix(0, c).UTC(), time.Unix(0, mod).UTC()
}

// ModelTimes returns when the learner started (creation or reset) and
// when it last released since (model/properties).
func (x *Experiment) ModelTimes() (created, modified time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.modelTimes()
}

// Now returns the service's time.
func (x *Experiment) Now() time.Time { return x.env.Now() }
