package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/linear"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
)

// Algorithm describes a policy that experiments can build by name.
type Algorithm struct {
	// Name is what --algo and configs call it.
	Name string
	// Summary is one line for `dpbandit list`.
	Summary string
	// Private algorithms take a privacy budget; others run once, non-private.
	Private bool
	// Counterpart names the non-private algorithm that private results are
	// compared with (paired differences, price of privacy) when it is in
	// the same experiment.
	Counterpart string
	// Params holds the accepted parameters with their defaults and
	// ranges; ParseAlgo rejects a value outside its range.
	Params map[string]Param
	// Build returns the policy for the parameters and budget (bandit
	// algorithms; nil for contextual ones).
	Build func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	// Set is the decision set of an online learner: "simplex" (or empty)
	// for experts, "ball" or "cube".
	Set string
	// OLO returns an online learner (nil for bandit algorithms).
	OLO func(p map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error)
	// Contextual returns the policy of a contextual algorithm (nil for
	// bandit ones).
	Contextual func(p map[string]float64, b privacy.Budget, s contextual.Setting) (contextual.Policy, error)
	// Linear marks algorithms that need action vectors (a linear-*
	// environment).
	Linear bool
	// WeakAudit, when set, says why the audit's default tables cannot show
	// power for this algorithm: its broken variants are then not audited.
	WeakAudit string
	// PureDP marks private algorithms whose mechanism is Laplace whatever
	// the budget: they are eps-DP, with eps = sqrt(2 rho) for a rho-zCDP
	// budget.
	PureDP bool
	// Redraw, if set, builds the deliberately broken variant that re-draws
	// its noise at every index evaluation (for audits only).
	Redraw func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	// AuditTables, if set, returns the neighbouring tables on which this
	// algorithm is hardest to audit; nil means audit.Hard.
	AuditTables func(p map[string]float64, b privacy.Budget, k int, T int64) (audit.Neighbours, error)
	// Bound, if set, returns the paper's regret upper bound at horizon T
	// for the instance's gaps, and whether it applies.
	Bound func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool)
}

// Param is one accepted parameter of an algorithm: its default and the
// range [Min, Max] it must lie in (an end is excluded when MinOpen or
// MaxOpen is set). Ranges are finite, so that every accepted value can be
// tested: the privacy tests run every private algorithm at the ends of
// each range (Edges), and a value that would make an algorithm
// non-private is outside its range.
type Param struct {
	Default          float64
	Min, Max         float64
	MinOpen, MaxOpen bool
}

// Check reports an error unless x lies in the parameter's range.
func (p Param) Check(x float64) error {
	if x < p.Min || x > p.Max || (p.MinOpen && x == p.Min) || (p.MaxOpen && x == p.Max) || x != x {
		return fmt.Errorf("must lie in %s, got %v", p.Range(), x)
	}
	return nil
}

// Range formats the range, e.g. "(0, 100]".
func (p Param) Range() string {
	lb, rb := "[", "]"
	if p.MinOpen {
		lb = "("
	}
	if p.MaxOpen {
		rb = ")"
	}
	return lb + trimFloat(p.Min) + ", " + trimFloat(p.Max) + rb
}

// Edges returns the extreme accepted values: Min and Max, or the nearest
// floats inside them at an open end.
func (p Param) Edges() [2]float64 {
	lo, hi := p.Min, p.Max
	if p.MinOpen {
		lo = math.Nextafter(lo, math.Inf(1))
	}
	if p.MaxOpen {
		hi = math.Nextafter(hi, math.Inf(-1))
	}
	return [2]float64{lo, hi}
}

// params is an algorithm's parameter table.
type params = map[string]Param

// The parameters shared by several algorithms.
var (
	// doublingBeta scales the exploration bonus of the doubling UCBs
	// (001 Eq. (14): beta = 1 in the experiments, beta > 3 in the theory).
	doublingBeta = Param{Default: 1, Min: 0, MinOpen: true, Max: 100}
	// seBeta is DP-SE's failure probability (000 Algorithm 3).
	// Below 1e-15 its first epoch outgrows any horizon.
	seBeta = Param{Default: 0.05, Min: 1e-15, Max: 1, MaxOpen: true}
	// klC is KL-UCB's c in ln t + c ln ln t.
	klC = Param{Default: 0, Min: 0, Max: 10}
	// confDelta is the confidence parameter of GOPE and OFUL's radii.
	confDelta = Param{Default: 0.001, Min: 1e-15, Max: 1, MaxOpen: true}
	// designTol is the Frank-Wolfe tolerance of the G-optimal design.
	designTol = Param{Default: 0.01, Min: 1e-4, Max: 1}
	// ridgeLambda is OFUL's regulariser lambda.
	ridgeLambda = Param{Default: 0.1, Min: 1e-6, Max: 1e6}
	// thetaBound is OFUL's bound S on ||theta*||.
	thetaBound = Param{Default: 1, Min: 0, Max: 1e6}
	// switchC is RS-OFUL's doubling constant C (0: OFUL's every step).
	switchC = Param{Default: 1, Min: 0, Max: 1e6}
	// privateSwitchC is AdaC-OFUL's C: releases happen only at
	// re-estimations, and C = 0 would re-estimate from exact sums at every
	// step without one, so it is excluded.
	privateSwitchC = Param{Default: 1, Min: 0, MinOpen: true, Max: 1e6}
)

// ParamList formats the algorithm's parameters as "k=default in range",
// sorted by key, e.g. "beta=1 in (0, 100]".
func (a Algorithm) ParamList() string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		p := a.Params[k]
		s = append(s, k+"="+trimFloat(p.Default)+" in "+p.Range())
	}
	return strings.Join(s, ", ")
}

// Points returns the parameter points of the algorithm that the privacy
// checks visit (the edge test and `dpbandit audit --all`): its defaults,
// then every parameter at each end of its accepted range, the others at
// their defaults, as specs ("adac-ucb", "adac-ucb:beta=100", ...).
func (a Algorithm) Points() []string {
	points := []string{a.Name}
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		for _, v := range a.Params[k].Edges() {
			points = append(points, a.Name+":"+k+"="+trimFloat(v))
		}
	}
	return points
}

// defaults returns the default value of every parameter.
func defaults(p params) map[string]float64 {
	out := make(map[string]float64, len(p))
	for k, v := range p {
		out[k] = v.Default
	}
	return out
}

// Algorithms returns the registry, sorted by name.
func Algorithms() []Algorithm {
	algos := []Algorithm{
		{
			Name:    "ucb1",
			Summary: "UCB1 (Auer et al. 2002), non-private, one step per plan",
			Params:  params{},
			Build: func(_ map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewUCB1(s)
			},
		},
		{
			Name:    "ucb-doubling",
			Summary: "UCB with arm-dependent doubling and forgetting, non-private counterpart of AdaC-UCB (001 Sec. VII)",
			Params:  params{"beta": doublingBeta},
			Build: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaCUCB(s, privacy.None(), p["beta"])
			},
		},
		{
			Name:        "adac-ucb",
			Summary:     "AdaC-UCB (001 Alg. 4, Eq. 14): Gaussian noise once per doubling episode; zCDP, (eps,delta) or Renyi",
			Private:     true,
			Counterpart: "ucb-doubling",
			Params:      params{"beta": doublingBeta},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaCUCB(s, b, p["beta"])
			},
			Redraw: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.BrokenAdaCUCB(s, b, p["beta"])
			},
			Bound: func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
				if b.Notion != privacy.ZCDP || p["beta"] <= 3 {
					return 0, false
				}
				v, err := theory.AdaCUCB(gaps, T, b.Rho, p["beta"])
				return v, err == nil
			},
		},
		{
			Name:        "adap-ucb",
			Summary:     "AdaP-UCB (Azize & Basu 2022): Laplace noise once per doubling episode, widened bonus; eps-DP (zCDP via eps=sqrt(2 rho))",
			Private:     true,
			PureDP:      true,
			Counterpart: "ucb-doubling",
			Params:      params{"beta": doublingBeta},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaPUCB(s, b, p["beta"])
			},
			Bound: func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
				rho, err := b.ToZCDP()
				if err != nil || p["beta"] <= 3 {
					return 0, false
				}
				v, err := theory.ConvertedPureDP(gaps, T, rho, p["beta"])
				return v, err == nil
			},
		},
		{
			Name:        "dp-se",
			Summary:     "DP Successive Elimination (000 Alg. 3): epochs, Lap(1/(eps R_e)) per arm per epoch; eps-DP (zCDP via eps=sqrt(2 rho))",
			Private:     true,
			PureDP:      true,
			Counterpart: "se",
			Params:      params{"beta": seBeta},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewDPSE(s, b, p["beta"])
			},
			Bound:       dpseBound,
			AuditTables: dpseAuditTables,
		},
		{
			Name:    "se",
			Summary: "successive elimination: DP-SE without noise, the non-private counterpart of dp-se",
			Params:  params{"beta": seBeta},
			Build: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewDPSE(s, privacy.None(), p["beta"])
			},
			Bound: dpseBound,
		},
		{
			Name:    "thompson",
			Summary: "Thompson sampling with Beta(1,1) priors (binarised rewards), non-private, one step per plan",
			Params:  params{},
			Build: func(_ map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewThompson(s)
			},
		},
		{
			Name:    "kl-ucb",
			Summary: "KL-UCB (Garivier & Cappe 2011), exploration ln t + c ln ln t, non-private, one step per plan",
			Params:  params{"c": klC},
			Build: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewKLUCB(s, p["c"])
			},
		},
		{
			Name:    "gope",
			Summary: "G-optimal design phased elimination (Lattimore & Szepesvari Alg. 12), non-private; linear",
			Linear:  true,
			Params:  params{"delta": confDelta, "tol": designTol},
			Build: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, privacy.None(), p["delta"], p["tol"], linear.NoiseTheta)
			},
		},
		{
			Name:        "adac-gope",
			Summary:     "AdaC-GOPE (001 Alg. 2, Eq. 4): Gaussian noise on V^-1/2 sum a r once per phase, scaled by the played g_l; linear",
			Private:     true,
			Linear:      true,
			Counterpart: "gope",
			Params:      params{"delta": confDelta, "tol": designTol},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, b, p["delta"], p["tol"], linear.NoiseTheta)
			},
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "adar-gope-var",
			Summary:     "AdaR-GOPE-Var (001 App. H): Gaussian noise on each support action's reward sum; linear",
			Private:     true,
			Linear:      true,
			Counterpart: "gope",
			Params:      params{"delta": confDelta, "tol": designTol},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewGOPE(s, b, p["delta"], p["tol"], linear.NoiseSums)
			},
			AuditTables: gopeAuditTables,
		},
		{
			Name:        "dp-pe",
			Summary:     "private phased elimination with core sets (Hanna et al. 2022, 000 Alg. 4): Laplace on per-action sums; eps-DP; linear",
			Private:     true,
			PureDP:      true,
			Linear:      true,
			Counterpart: "gope",
			Params:      params{},
			Build: func(_ map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return linear.NewDPPE(s, b)
			},
			WeakAudit: "its elimination margin 2 gamma_i (verbatim from 000) exceeds the reward range in early batches, so no table puts an action on the boundary",
		},
		{
			Name:    "oful",
			Summary: "OFUL (Abbasi-Yadkori et al. 2011): ridge estimate and radius updated every step; non-private; contextual",
			Params:  params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound},
			Contextual: func(p map[string]float64, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: 0, Budget: privacy.None()})
			},
		},
		{
			Name:    "rs-oful",
			Summary: "rarely switching OFUL: re-estimates when det V grows by 1 + c; non-private; contextual",
			Params:  params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": switchC},
			Contextual: func(p map[string]float64, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: p["c"], Budget: privacy.None()})
			},
		},
		{
			Name:        "adac-oful",
			Summary:     "AdaC-OFUL (001 Alg. 3, Thm 14): Gaussian noise on each episode's sum a r, widened radius; zCDP, (eps,delta) or Renyi; contextual",
			Private:     true,
			Counterpart: "rs-oful",
			Params:      params{"lambda": ridgeLambda, "delta": confDelta, "s": thetaBound, "c": privateSwitchC},
			Contextual: func(p map[string]float64, b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
				return contextual.New(s, contextual.Config{Lambda: p["lambda"], Delta: p["delta"], S: p["s"], C: p["c"], Budget: b})
			},
		},
		{
			Name:    "hedge",
			Summary: "Hedge: FTRL with the entropic regulariser, eta = sqrt(ln N/T); non-private; experts, full information",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLExperts(s, privacy.None())
			},
		},
		{
			Name:        "dp-ftrl-experts",
			Summary:     "private FTRL (003 Alg. 1, Cor. 3.2): Hedge on TreeBasedAgg sums, Lap(N L/eps) nodes for eps-DP, Gaussian nodes (rho/L per level) for zCDP; experts",
			Private:     true,
			Counterpart: "hedge",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLExperts(s, b)
			},
			WeakAudit: "one loss moves the tree's sums by at most 1 per coordinate against node noise of scale N L/eps (or sqrt(N L/(2 rho))), even divided by 10",
		},
		{
			Name:    "ftrl-ball",
			Summary: "FTRL with the squared norm over the unit ball, eta = sqrt(2/T); non-private; online linear optimisation",
			Set:     "ball",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, privacy.None())
			},
		},
		{
			Name:        "dp-ftrl-ball",
			Summary:     "private FTRL over the ball (003 Cor. 3.2 case 2) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:     true,
			Counterpart: "ftrl-ball",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, b)
			},
			Set:       "ball",
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:    "ftrl-cube",
			Summary: "FTRL with the squared norm over the cube [-1,1]^N, eta = sqrt(2N/T); non-private; online linear optimisation",
			Set:     "cube",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, privacy.None())
			},
		},
		{
			Name:        "dp-ftrl-cube",
			Summary:     "private FTRL over the cube (003 Cor. 3.2 case 3) on TreeBasedAgg sums; Laplace nodes for eps-DP, Gaussian for zCDP",
			Private:     true,
			Counterpart: "ftrl-cube",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTRLQuad(s, b)
			},
			Set:       "cube",
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against node noise L times that diameter/eps (or sqrt(L/(2 rho)) times it)",
		},
		{
			Name:    "ftpl",
			Summary: "Follow the Perturbed Leader (003 Alg. 3, one Gaussian perturbation of Thm 3.5's regret scale); non-private; simplex, ball or cube",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTPL(s, privacy.None())
			},
		},
		{
			Name:        "dp-ftpl",
			Summary:     "private FTPL (003 Alg. 3, Thm 3.5): TreeBasedAgg with Gaussian nodes; (eps,delta)-DP, zCDP or Renyi; simplex, ball or cube",
			Private:     true,
			Counterpart: "ftpl",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewFTPL(s, b)
			},
			WeakAudit: "one loss moves the tree's sums by at most the loss set's diameter against Gaussian node noise of at least the regret scale",
		},
		{
			Name:    "exp2",
			Summary: "EXP2 with uniform exploration (003 Alg. 5, parameters of Thm 4.1 with lambda = 0); non-private; experts, bandit feedback",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewEXP2(s, privacy.None())
			},
		},
		{
			Name:        "dp-exp2",
			Summary:     "private EXP2 (003 Alg. 4 + 5, Thm 4.1): loss + Lap(1/eps) fed to EXP2; eps-DP; experts, bandit feedback",
			Private:     true,
			PureDP:      true,
			Counterpart: "exp2",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewEXP2(s, b)
			},
			WeakAudit: "with Theorem 4.1's small learning rate one loss barely moves EXP2's distribution",
		},
		{
			Name:    "scrible",
			Summary: "SCRiBLE (Abernethy, Hazan, Rakhlin) on the unit ball, barrier -ln(1-|x|^2), eta of 003 Thm 4.5 with lambda = 0; non-private; bandit feedback",
			Set:     "ball",
			Params:  params{},
			OLO: func(_ map[string]float64, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewSCRiBLE(s, privacy.None())
			},
		},
		{
			Name:        "dp-scrible",
			Summary:     "private SCRiBLE (003 Alg. 4 + SCRiBLE, Thm 4.5): <l + Z, y> fed back, Z ~ Lap^N(2 sqrt(N)/eps); eps-DP; ball, bandit feedback",
			Private:     true,
			PureDP:      true,
			Counterpart: "scrible",
			Set:         "ball",
			Params:      params{},
			OLO: func(_ map[string]float64, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
				return olo.NewSCRiBLE(s, b)
			},
			WeakAudit: "with Theorem 4.5's small learning rate one loss barely moves SCRiBLE's point",
		},
	}
	slices.SortFunc(algos, func(a, b Algorithm) int { return strings.Compare(a.Name, b.Name) })
	return algos
}

// dpseBound is the high-probability regret bound of DP-SE that follows
// from Lemma 4.1 of seed 000 (theory.DPSEPulls): sum_a gap_a * pulls_a,
// which holds with probability at least 1 - beta.
func dpseBound(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
	eps := math.Inf(1)
	if b.IsPrivate() {
		rho, err := b.ToZCDP()
		if err != nil {
			return 0, false
		}
		eps = math.Sqrt(2 * rho)
	}
	total := 0.0
	for _, g := range gaps {
		if g > 0 {
			n, err := theory.DPSEPulls(g, len(gaps), p["beta"], eps, T)
			if err != nil {
				return 0, false
			}
			total += g * n
		}
	}
	return total, true
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

// dpseAuditTables puts arm 0's first-epoch mean on DP-SE's elimination
// boundary: every arm pays 1/2 except arm 0, which pays 1/2 - 2h - 2c
// (mab.DPSEEpoch, epoch 1), so whether it survives the first epoch hinges
// on the noise, and the one differing reward moves the odds.
func dpseAuditTables(p map[string]float64, b privacy.Budget, k int, T int64) (audit.Neighbours, error) {
	rho, err := b.ToZCDP()
	if err != nil {
		return audit.Neighbours{}, err
	}
	eps := math.Sqrt(2 * rho)
	if b.Notion == privacy.Pure {
		eps = b.Eps
	}
	_, h, c := mab.DPSEEpoch(1, k, p["beta"], eps, 1)
	nb := audit.Hard(k, T)
	nb.Base[0] = math.Max(0, 0.5-2*h-2*c)
	nb.First = [2]float64{1, 0}
	return nb, nil
}

// lookup returns the registered algorithm of that name.
func lookup(name string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if a.Name == name {
			return a, nil
		}
	}
	names := make([]string, 0)
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return Algorithm{}, fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(names, ", "))
}

// AlgoSpec is a parsed algorithm spec "name" or "name:key=value:key=value".
type AlgoSpec struct {
	Algorithm
	// Values holds every parameter: the defaults overridden by the spec.
	Values map[string]float64
	// Spec is the canonical spec string, with the parameters the user set.
	Spec string
}

// ParseAlgo parses an algorithm spec such as "adac-ucb:beta=4".
func ParseAlgo(spec string) (AlgoSpec, error) {
	fields := strings.Split(strings.TrimSpace(spec), ":")
	a, err := lookup(fields[0])
	if err != nil {
		return AlgoSpec{}, err
	}
	vals := defaults(a.Params)
	var set []string
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %q needs the form key=number", spec, f)
		}
		p, known := a.Params[k]
		if !known {
			if len(a.Params) == 0 {
				return AlgoSpec{}, fmt.Errorf("algorithm %q: unknown parameter %q (%s takes none)", a.Name, k, a.Name)
			}
			keys := slices.Sorted(maps.Keys(a.Params))
			return AlgoSpec{}, fmt.Errorf("algorithm %q: unknown parameter %q (known: %s)", a.Name, k, strings.Join(keys, ", "))
		}
		if seen[k] {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %q is given twice", spec, k)
		}
		seen[k] = true
		if err := p.Check(x); err != nil {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %s %v", a.Name, k, err)
		}
		vals[k] = x
		set = append(set, k+"="+trimFloat(x))
	}
	slices.Sort(set)
	canon := strings.Join(append([]string{a.Name}, set...), ":")
	return AlgoSpec{Algorithm: a, Values: vals, Spec: canon}, nil
}

// trimFloat formats x in its shortest form.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ParamString formats parameters as "k1=v1,k2=v2", sorted by key.
func ParamString(p map[string]float64) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		s = append(s, k+"="+trimFloat(p[k]))
	}
	return strings.Join(s, ",")
}
