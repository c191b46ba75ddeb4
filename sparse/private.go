package sparse

import (
	"math"
	"math/bits"
	"slices"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// PrivateConfig holds the parameters of PrivateLasso.
type PrivateConfig struct {
	Config
	// S0 is the sparsity the learner assumes and SBar 002's s-bar: the
	// sparse vector technique stops after ceil(S0 + sqrt(SBar)) hits.
	S0   int
	SBar float64
	// Paper selects 002's budget split (Algorithm 1, line 2), which
	// divides the re-estimations' share by ln(1/delta_2) too; without it
	// the split is the plain basic composition (see PrivateLasso).
	Paper bool
	// Peel estimates the support by PrivateScreen (c = ceil(S0 +
	// sqrt(SBar)) coordinates peeled from the noisy marginal
	// correlations, at each re-estimation's eps_1 with the basic split)
	// instead of the LASSO and SparseEstimation: the tighter calibration.
	Peel bool
}

// PrivateLasso is PrivateThresholdLASSO, 002's Algorithm 1: at t in L =
// {1, 2, 4, ...} the LASSO on the history (as LassoBandit) and
// SparseEstimation (Algorithm 2) give the support S_t; at every step the
// least squares on S_t is computed from the private Gram matrix of z_s =
// [x_s; r_s] released by a Wishart tree (mechanism.WishartTree,
// restricted to S_t and the reward), projected on the ball of radius
// C_theta, and the action of largest estimated reward is played (line
// 13).
//
// Privacy unit and threat model (002, Definition 3): a step's data are
// its decision set and its reward; two streams are neighbours when they
// differ in one step. The policy declares ||x|| <= 1 for the contexts
// (actions of larger norm are errors) and the reward range [lo, hi]
// (rewards are clipped to it), so ||z_s||^2 <= 1 + R^2, R = max(|lo|,
// |hi|). The supports and the tree's releases are (eps, delta)-DP in the
// stream; each action is computed from them and the step's own decision
// set, so the sequence of actions is (eps, delta)-jointly DP (Billboard
// lemma, 002 Lemma 1). The adversary sees everything the policy
// releases and every action but the target step's.
//
// Budget split (line 2, read): with E = ceil(log2 T) re-estimations that
// see data and L = floor(log2 T) + 1 tree levels, each re-estimation's
// sparse vector pass gets (eps_1, delta_1) with delta_1 = delta/(2E) and
// eps_1 = eps/(2E), divided further by ln(1/delta_2) (delta_2 = delta_1)
// with Paper, as 002 prints it; each node of the tree gets (eps/(2L),
// delta/(2L)). A step's data enter every re-estimation and one node per
// level, so basic composition gives (eps, delta) in all. The Wishart
// nodes are calibrated for releases on U = 1 + E c coordinates (the
// reward and every support the re-estimations can return, c the cutoff),
// mechanism.NewWishart.
//
// Non-private parts: the LASSO's regularisation path, which only the
// sparse vector pass reads. 002's SparseEstimation also screens
// coordinates without noise before that pass; that screen fails the
// empirical audit, so SparseEstimation here runs the sparse vector pass
// over every coordinate (see SparseEstimation).
//
// With Peel, the support comes from PrivateScreen at eps_1 = eps/(2E)
// (pure DP, the same share of the basic split), and no LASSO is fitted:
// 002's calibration leaves the support uninformative at any practical
// eps (docs/algorithms.md), this one does not.
type PrivateLasso struct {
	greedy
	cfg   PrivateConfig
	est   EstimationConfig
	tree  *mechanism.WishartTree
	nz    noise.Noise
	z     [][]float64 // x_s (the LASSO's rows): views of hist's rows
	hist  [][]float64 // z_s = [x_s; r_s]
	theta []float64
	r     float64 // R = max(|lo|, |hi|)
}

// NewPrivateLasso returns the policy for an (eps, delta) budget.
func NewPrivateLasso(s contextual.Setting, b privacy.Budget, c PrivateConfig) (*PrivateLasso, error) {
	if b.Notion != privacy.Approx {
		return nil, inputf("PrivateThresholdLASSO needs an (eps, delta) budget (give eps with delta), got %s", b)
	}
	if err := noise.Check(s.Noise); err != nil {
		return nil, inputf("a private policy: %w", err)
	}
	if _, err := NewLassoBandit(s, c.Config); err != nil {
		return nil, err
	}
	if c.S0 < 1 || !(c.SBar >= 1) || math.IsInf(c.SBar, 0) {
		return nil, inputf("s0 must be at least 1 and sbar finite and at least 1, got %d and %v", c.S0, c.SBar)
	}
	if s.Horizon < 2 {
		return nil, inputf("PrivateThresholdLASSO needs the horizon (at least 2), got %d", s.Horizon)
	}
	E := bits.Len64(uint64(s.Horizon - 1)) // ceil(log2 T)
	L := mechanism.WishartLevels(s.Horizon)
	delta1 := b.Delta / float64(2*E)
	eps1 := b.Eps / float64(2*E)
	if c.Paper && !c.Peel {
		eps1 /= math.Log(1 / delta1)
	}
	est := EstimationConfig{S0: c.S0, SBar: c.SBar, CTheta: c.CTheta, Eps1: eps1, Delta1: delta1, D: max(s.Dim, 2), T: s.Horizon}
	R := max(math.Abs(s.Bounds.Lo), math.Abs(s.Bounds.Hi))
	u := min(1+E*est.Cutoff(), s.Dim+1)
	w, err := s.Calibrations.Wishart(b.Eps/float64(2*L), b.Delta/float64(2*L), math.Sqrt(1+R*R), u, s.Dim+1)
	if err != nil {
		return nil, err
	}
	p := &PrivateLasso{cfg: c, greedy: greedy{bounds: s.Bounds, d: s.Dim, next: 1}, est: est, nz: s.Noise, r: R}
	p.reestimate, p.solve = p.refit, p.leastSquares
	p.tree, err = mechanism.NewWishartTree(w, s.Dim+1, s.Horizon, func(t int64) []float64 { return p.hist[t-1] }, s.Noise)
	if err != nil {
		return nil, err
	}
	return p, p.tree.SetSupport([]int{s.Dim})
}

// Update records the reward (clipped to the range) and adds the step to
// the tree.
func (p *PrivateLasso) Update(reward float64) error {
	x, r, err := p.take(reward)
	if err != nil {
		return err
	}
	h := append(x, r) // x is the policy's own copy
	p.z, p.hist = append(p.z, h[:p.d:p.d]), append(p.hist, h)
	return p.tree.Add()
}

// refit runs the LASSO and SparseEstimation and moves the tree to the
// new support.
func (p *PrivateLasso) refit(t int64) error {
	if len(p.y) == 0 {
		return nil // no data: the support stays empty
	}
	if p.cfg.Peel {
		supp, err := PrivateScreen(p.z, p.y, min(p.est.Cutoff(), p.d), p.est.Eps1, p.r, p.nz)
		if err != nil {
			return err
		}
		slices.Sort(supp)
		p.supp, p.stale = supp, true
		return p.tree.SetSupport(append(supp, p.d))
	}
	lambda := Lambda(p.cfg.Lambda0, t, p.d)
	theta, _, err := Lasso(p.z, p.y, lambda, p.cfg.CTheta, 1e-8, p.theta)
	if err != nil {
		return err
	}
	p.theta = theta
	c := p.est
	c.Lambda = lambda
	supp, err := SparseEstimation(theta, c, p.nz)
	if err != nil {
		return err
	}
	p.supp = supp
	p.stale = true
	return p.tree.SetSupport(append(slices.Clone(supp), p.d))
}

// leastSquares computes the private least squares on the support from
// the tree's release, projected on the C_theta ball.
func (p *PrivateLasso) leastSquares() error {
	s := len(p.supp)
	p.coef = make([]float64, s)
	if s == 0 {
		return nil
	}
	g := p.tree.Release() // (s+1) x (s+1), the reward last
	m := s + 1
	a := make([]float64, s*s)
	for i := range s {
		for j := range s {
			a[i*s+j] = g[i*m+j]
		}
		a[i*s+i] += p.cfg.Ridge
	}
	inv, ok := linalg.InvSPD(a, s)
	if !ok {
		return liberr.New("sparse", "the private Gram matrix is singular")
	}
	norm := 0.0
	for i := range s {
		for j := range s {
			p.coef[i] += inv[i*s+j] * g[j*m+s]
		}
		norm += p.coef[i] * p.coef[i]
	}
	if norm = math.Sqrt(norm); norm > p.cfg.CTheta {
		for i := range p.coef {
			p.coef[i] *= p.cfg.CTheta / norm
		}
	}
	return nil
}
