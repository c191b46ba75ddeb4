package experiment

import (
	"github.com/dpbandit/dpbandit/catalog"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// finiteFamily is the family of finite-armed stochastic bandits (seeds
// 000 and 001): Bernoulli and clipped Gaussian arms, policies that speak
// in plans (bandit.Policy), simulated by sim.Run.
type finiteFamily struct{}

func (finiteFamily) Kind() catalog.Kind { return catalog.Finite }
func (finiteFamily) Kinds() []string    { return []string{"bernoulli", "gaussian"} }

func (f finiteFamily) Parse(spec string, seed uint64) (World, error) {
	inst, err := env.Parse(spec, seed)
	return banditWorld{Instance: inst, fam: f}, err
}

func (finiteFamily) Trial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return banditTrial(a, c, nb, wrap)
}

func (finiteFamily) Neighbours(k int, T int64) audit.Neighbours { return audit.Hard(k, T) }
