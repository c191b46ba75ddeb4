package catalog

import (
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/privacy"
)

var (
	// clientModel is the client model of 004 Section 3; none is the
	// non-private learner that sees raw rewards.
	clientModel = choice("none", "m1", "m2", "none")
	// batches is B, the number of batches (q = T^(1/B)).
	batches = Param{Default: 4, Min: 2, Max: 64}
	// assumedAlpha is the corruption probability robust-ae assumes.
	assumedAlpha = Param{Default: 0.05, Min: 0, Max: 0.25, MaxOpen: true}
	// truncNu is M2's truncation nu (004 Algorithm 1, line 5).
	truncNu = Param{Default: 0.05, Min: 0, MinOpen: true, Max: 1}
	// ldpUnit is what the eps given protects: one reward (004's
	// Definition 1.1, the default) or one client over the run (an M2
	// client holds every reward of its action; the randomisers' eps is
	// derived).
	ldpUnit = choice("reward", "reward", "client")
	// corruptionTerm is which of 004's readings of the corruption term
	// widens the elimination threshold: Theorem 3.4's sqrt(alpha d) or
	// Eq. (50)'s d sqrt(alpha) (linear.BatchedConfig.Eq50).
	corruptionTerm = choice("thm34", "thm34", "eq50")
	// coresetTol is the design tolerance: 1 is 004's g <= 2d.
	coresetTol = Param{Default: 1, Min: 1e-4, Max: 1}
)

// robustBatched returns the robust batched linear bandit algorithms
// under local DP (seed 004).
func robustBatched() []Algorithm {
	models := []linear.Model{linear.M1, linear.M2, linear.Central} // clientModel's order
	build := func(robust bool) func(Args, privacy.Budget, bandit.Setting) (bandit.BatchPolicy, error) {
		return func(p Args, b privacy.Budget, s bandit.Setting) (bandit.BatchPolicy, error) {
			cfg := linear.BatchedConfig{Model: models[int(p.F("model"))], Robust: robust,
				Batches: int(p.F("batches")), Delta: p.F("delta"), Nu: p.F("nu"), Tol: p.F("tol")}
			if robust { // batched-ae declares neither: no Filter, no corruption term
				cfg.Alpha, cfg.Eq50 = p.F("alpha"), p.F("reading") == 1
			}
			return linear.NewBatched(s, b, cfg)
		}
	}
	// clientRewards: an M2 client holds every reward of its action, at
	// most ceil(q^i) in batch i = 1..B-1 (linear.Batched.Next plays
	// ceil(q^i max(pi(a), nu)) <= ceil(q^i) times, q = T^(1/B)); its one
	// report per batch is eps-DP in each reward, so n_i eps-DP in all n_i
	// of them. An M1 client holds one reward.
	clientRewards := func(p Args, T int64) int64 {
		if models[int(p.F("model"))] != linear.M2 {
			return 1
		}
		b := int(p.F("batches"))
		q := math.Pow(float64(T), 1/float64(b))
		n := int64(0)
		for i := 1; i < b; i++ {
			n += int64(math.Ceil(math.Pow(q, float64(i))))
		}
		return n
	}
	return []Algorithm{
		{
			Name:          "robust-ae",
			Summary:       "robust arm elimination (004 Alg. 1): B batches, spectral Filter (Alg. 2) on M^-1/2 a r, clients M1 (Lap(w/eps) per reward) or M2 (Lap(w/(n eps)) per action mean); eps-LDP per reward (unit=client: per client over the run, an M2 client holding all its action's rewards); linear",
			Private:       true,
			PureDP:        true,
			Local:         true,
			Counterpart:   "robust-ae",
			Params:        params{"model": clientModel, "batches": batches, "alpha": assumedAlpha, "delta": confDelta, "nu": truncNu, "tol": coresetTol, "unit": ldpUnit, "reading": corruptionTerm},
			ClientRewards: clientRewards,
			Batched:       build(true),
		},
		{
			Name:          "batched-ae",
			Summary:       "the same batched elimination on plain least squares, no Filter (004's non-robust baseline); eps-LDP per reward (unit=client: per client); linear",
			Private:       true,
			PureDP:        true,
			Local:         true,
			Counterpart:   "batched-ae",
			Params:        params{"model": clientModel, "batches": batches, "delta": confDelta, "nu": truncNu, "tol": coresetTol, "unit": ldpUnit},
			ClientRewards: clientRewards,
			Batched:       build(false),
		},
	}
}
