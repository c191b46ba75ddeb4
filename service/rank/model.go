package rank

import (
	"context"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
)

// Model is a Personalizer experiment's model export (its model GET): the
// learner's released estimate only (engine.Estimate), never a raw sum or
// a reward.
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

// Export returns x's model export, once every release it reflects is
// durable: NotFound on an experiment of another surface or a learner
// that exports no estimate (engine.Experiment.Model).
func Export(ctx context.Context, x *engine.Experiment) (Model, error) {
	est, err := x.Model(ctx)
	if err != nil {
		return Model{}, err
	}
	def := x.Definition()
	return Model{Algorithm: est.Algorithm, HashBits: def.HashBits, Dim: def.Dim, Episodes: est.Episodes,
		Theta: est.Theta, Created: est.Created, Modified: est.Modified}, nil
}
