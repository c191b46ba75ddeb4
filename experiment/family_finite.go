package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
)

// finiteFamily is the family of finite-armed stochastic bandits (seeds
// 000 and 001): Bernoulli and clipped Gaussian arms, policies that speak
// in plans (bandit.Policy), simulated by sim.Run. Its algorithms run on
// every K-armed instance, linear ones included.
type finiteFamily struct{ plans }

func (finiteFamily) Kind() catalog.Kind { return catalog.Finite }
func (finiteFamily) Envs() []string {
	return append([]string{"bernoulli", "gaussian"}, env.DriftingKinds()...)
}

func (finiteFamily) Runs(w World) bool {
	_, ok := w.(banditWorld)
	return ok
}

func (finiteFamily) Neighbours(k int, T int64) audit.Neighbours { return audit.Hard(k, T) }
