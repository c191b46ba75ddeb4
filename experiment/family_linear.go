package experiment

import (
	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// linearFamily is the family of stochastic linear bandits with a finite
// action set (seeds 000 and 001): arms are vectors; the finite-armed
// algorithms run on its environments too, as K-armed bandits.
type linearFamily struct{}

func (linearFamily) Name() string    { return "linear bandits (finite action sets)" }
func (linearFamily) Kinds() []string { return []string{"linear-sphere", "linear-net"} }

func (f linearFamily) Parse(spec string, seed uint64) (World, error) {
	inst, err := env.Parse(spec, seed)
	return linearWorld{banditWorld{Instance: inst, fam: f, also: finiteFamily{}}}, err
}

func (linearFamily) Trial(a AlgoSpec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	return banditTrial(a, c, nb, wrap)
}

// Neighbours puts the audit's K arms on the unit vectors of R^K, which
// make the linear bandit a K-armed one.
func (linearFamily) Neighbours(k int, T int64) audit.Neighbours {
	nb := audit.Hard(k, T)
	nb.Actions = unitVectors(k)
	return nb
}

// Algorithms returns the linear algorithms.
func (linearFamily) Algorithms() []Algorithm {
	return []Algorithm{
		{
			Name:    "gope",
			Summary: "G-optimal design phased elimination (Lattimore & Szepesvari Alg. 12), non-private; linear",
			Params:  params{"delta": confDelta, "tol": designTol},
			New: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, privacy.None(), p["delta"], p["tol"], linear.NoiseTheta)
			},
		},
		{
			Name:        "adac-gope",
			Summary:     "AdaC-GOPE (001 Alg. 2, Eq. 4): Gaussian noise on V^-1/2 sum a r once per phase, scaled by the played g_l; linear",
			Private:     true,
			Counterpart: "gope",
			Params:      params{"delta": confDelta, "tol": designTol},
			New: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, b, p["delta"], p["tol"], linear.NoiseTheta)
			},
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "adar-gope-var",
			Summary:     "AdaR-GOPE-Var (001 App. H): Gaussian noise on each support action's reward sum; linear",
			Private:     true,
			Counterpart: "gope",
			Params:      params{"delta": confDelta, "tol": designTol},
			New: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, b, p["delta"], p["tol"], linear.NoiseSums)
			},
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "dp-pe",
			Summary:     "private phased elimination with core sets (Hanna et al. 2022, 000 Alg. 4): Laplace on per-action sums; eps-DP; linear",
			Private:     true,
			PureDP:      true,
			Counterpart: "gope",
			Params:      params{},
			New: func(_ map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewDPPE(s, b)
			},
			WeakAudit: "its elimination margin 2 gamma_i (verbatim from 000) exceeds the reward range in early batches, so no table puts an action on the boundary",
		},
	}
}

// gopeAuditTables puts arm 0 on the elimination boundary of the first
// phase of the GOPE family, on the unit vectors of R^K (which make the
// linear bandit a K-armed one) with rewards in [-1, 1]: every reward is
// 1/2 except arm 0's, -1/2, exactly 2 beta_1 = 1 below, and its first
// reward is 1 or -1.
func gopeAuditTables(_ map[string]float64, _ privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	nb := audit.Hard(k, T)
	nb.Base[0] = -0.5
	nb.First = [2]float64{1, -1}
	nb.Bounds = mechanism.Bounds{Lo: -1, Hi: 1}
	nb.Actions = unitVectors(k)
	return nb, nil
}

// unitVectors returns e_1, ..., e_k in R^k.
func unitVectors(k int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, k)
		out[i][i] = 1
	}
	return out
}
