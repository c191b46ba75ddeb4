package experiment

import (
	"context"
	"math/bits"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// onlineFamily is the family of online learning (seed 003): loss
// sequences, full-information learners and adversarial bandits
// (olo.Learner), simulated by sim.RunOLO with exact regret.
type onlineFamily struct{}

// onlineAlgo is the constructor of the family's algorithms with the
// decision set they play on: "simplex" (experts), "ball" or "cube".
type onlineAlgo struct {
	set string
	new func(p map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error)
}

// online returns an onlineAlgo.
func online(set string, f func(p map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error)) onlineAlgo {
	return onlineAlgo{set, f}
}

func (onlineFamily) Name() string { return "online learning" }
func (onlineFamily) Kinds() []string {
	return []string{"experts-iid", "experts-switching", "ball", "cube"}
}

func (onlineFamily) Parse(spec string, seed uint64) (World, error) {
	l, err := olo.ParseLosses(spec, seed)
	return onlineWorld{l}, err
}

func (onlineFamily) Neighbours(k int, T int64) audit.Neighbours { return audit.Hard(k, T) }

func (onlineFamily) Trial(a AlgoSpec, c AuditConfig, _ audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	oa := a.New.(onlineAlgo)
	build := func(s olo.Setting) (olo.Learner, error) { return oa.new(a.Values, c.Budget, s) }
	if _, err := build(olo.Setting{N: c.Arms, T: 1000, Set: oa.set, Rand: noise.Stream(0), Noise: noise.NewFast(0)}); err != nil {
		return nil, err
	}
	return audit.OLOTrial(build, oa.set, c.Arms, 1000, [2]float64{1, 0}, c.Seed, wrap)
}

// Algorithms returns the online learners.
func (onlineFamily) Algorithms() []Algorithm {
	return []Algorithm{
		{
			Name:    "hedge",
			Summary: "Hedge: FTRL with the entropic regulariser, eta = sqrt(ln N/T); non-private; experts, full information",
			Params:  params{},
			New: online("simplex", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLExperts(s, privacy.None())
			}),
		},
		{
			Name:        "dp-ftrl-experts",
			Summary:     "private FTRL (003 Alg. 1, Cor. 3.2): Hedge on TreeBasedAgg sums, Lap(N L/eps) nodes for eps-DP, Gaussian nodes (rho/L per level) for zCDP; experts",
			Private:     true,
			Counterpart: "hedge",
			Params:      params{},
			New: online("simplex", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLExperts(s, b)
			}),
			WeakAudit: "one loss moves the tree's sums by at most 1 per coordinate against node noise of scale N L/eps (or sqrt(N L/(2 rho))), even divided by 10",
		},
		{
			Name:    "ftrl-ball",
			Summary: "FTRL with the squared norm over the unit ball, eta = sqrt(2/T); non-private; online linear optimisation",
			Params:  params{},
			New: online("ball", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, privacy.None())
			}),
		},
		{
			Name:        "dp-ftrl-ball",
			Summary:     "private FTRL over the ball (003 Cor. 3.2 case 2) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:     true,
			Counterpart: "ftrl-ball",
			Params:      params{},
			New: online("ball", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, b)
			}),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:    "ftrl-cube",
			Summary: "FTRL with the squared norm over the cube [-1,1]^N, eta = sqrt(2N/T); non-private; online linear optimisation",
			Params:  params{},
			New: online("cube", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, privacy.None())
			}),
		},
		{
			Name:        "dp-ftrl-cube",
			Summary:     "private FTRL over the cube (003 Cor. 3.2 case 3) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:     true,
			Counterpart: "ftrl-cube",
			Params:      params{},
			New: online("cube", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, b)
			}),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:    "ftpl",
			Summary: "Follow the Perturbed Leader (003 Alg. 3, one Gaussian perturbation of Thm 3.5's regret scale); non-private; simplex, ball or cube",
			Params:  params{},
			New: online("simplex", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTPL(s, privacy.None())
			}),
		},
		{
			Name:        "dp-ftpl",
			Summary:     "private FTPL (003 Alg. 3, Thm 3.5): TreeBasedAgg with Gaussian nodes; (eps,delta)-DP, zCDP or Renyi; simplex, ball or cube",
			Private:     true,
			Counterpart: "ftpl",
			Params:      params{},
			New: online("simplex", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTPL(s, b)
			}),
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against Gaussian node noise of at least the regret scale",
		},
		{
			Name:    "exp2",
			Summary: "EXP2 with uniform exploration (003 Alg. 5, parameters of Thm 4.1 with lambda = 0); non-private; experts, bandit feedback",
			Params:  params{},
			New: online("simplex", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewEXP2(s, privacy.None())
			}),
		},
		{
			Name:        "dp-exp2",
			Summary:     "private EXP2 (003 Alg. 4 + 5, Thm 4.1): loss + Lap(1/eps) fed to EXP2; eps-DP; experts, bandit feedback",
			Private:     true,
			PureDP:      true,
			Counterpart: "exp2",
			Params:      params{},
			New: online("simplex", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewEXP2(s, b)
			}),
			WeakAudit: "with Theorem 4.1's small learning rate one loss barely moves EXP2's distribution",
		},
		{
			Name:    "scrible",
			Summary: "SCRiBLE (Abernethy, Hazan, Rakhlin) on the unit ball, barrier -ln(1-|x|^2), eta of 003 Thm 4.5 with lambda = 0; non-private; bandit feedback",
			Params:  params{},
			New: online("ball", func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewSCRiBLE(s, privacy.None())
			}),
		},
		{
			Name:        "dp-scrible",
			Summary:     "private SCRiBLE (003 Alg. 4 + SCRiBLE, Thm 4.5): <l + Z, y> fed back, Z ~ Lap^N(2 sqrt(N)/eps); eps-DP; ball, bandit feedback",
			Private:     true,
			PureDP:      true,
			Counterpart: "scrible",
			Params:      params{},
			New: online("ball", func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewSCRiBLE(s, b)
			}),
			WeakAudit: "with Theorem 4.5's small learning rate one loss barely moves SCRiBLE's point",
		},
	}
}

// onlineWorld is a loss sequence.
type onlineWorld struct{ *olo.Losses }

// Bounds is the range of one loss coordinate.
func (onlineWorld) Bounds() mechanism.Bounds { return mechanism.Unit }

// learner builds one instance of an online learner for the loss
// sequence, on a fixed stream (for checks and bounds).
func (w onlineWorld) learner(a AlgoSpec, b privacy.Budget, T int64) (olo.Learner, error) {
	oa, ok := a.New.(onlineAlgo)
	if !ok {
		return nil, misfit(a, onlineFamily{})
	}
	return oa.new(a.Values, b, olo.Setting{N: w.N, T: T, Set: w.Set(), Rand: noise.Stream(0), Noise: noise.NewFast(0)})
}

func (w onlineWorld) Check(a AlgoSpec, b privacy.Budget, T int64) error {
	_, err := w.learner(a, b, T)
	return err
}

func (w onlineWorld) Simulate(ctx context.Context, c Config, es []entry, steps sim.Steps) (*sim.Result, error) {
	oe := make([]sim.OLOEntry, len(es))
	for i, e := range es {
		oa := e.algo.New.(onlineAlgo)
		oe[i] = sim.OLOEntry{Name: e.label, NoiseKey: noiseKey(e.algo.Spec), New: func(s olo.Setting) (olo.Learner, error) {
			s.Noise = e.noise(s.Noise)
			return oa.new(e.algo.Values, e.budget, s)
		}}
	}
	return sim.RunOLO(ctx, sim.OLOConfig{Env: w.Losses, Steps: steps}, oe)
}

// Curves evaluates the learner's explicit regret bound (olo.Bounder) at
// every checkpoint, if it has one.
func (w onlineWorld) Curves(e entry, T int64, ts []int64) (upper, lower []float64) {
	l, err := w.learner(e.algo, e.budget, T)
	b, ok := l.(olo.Bounder)
	if err != nil || !ok {
		return nil, nil
	}
	upper = make([]float64, len(ts))
	for i, t := range ts {
		upper[i] = b.Bound(t)
	}
	return upper, nil
}

// Footprint: the loss vectors per run; a learner's tree (three vectors
// per level and a bank of as many) and its own vectors per policy.
func (w onlineWorld) Footprint(T int64, _ []AlgoSpec) (perRun, perPolicy int64) {
	n, levels := int64(w.N), int64(bits.Len64(uint64(max(T, 1))))
	return 8 * 4 * n, 8 * n * (4*levels + 8)
}
