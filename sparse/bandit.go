package sparse

import (
	"math"
	"math/bits"
	"slices"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
)

// Config holds the parameters of the LASSO bandits.
type Config struct {
	// Lambda0 scales the LASSO penalty: lambda_t = Lambda0 sqrt(2 ln t
	// ln d / (t d)) (see LassoBandit).
	Lambda0 float64
	// CTheta bounds ||theta*||_2 (002's C_theta).
	CTheta float64
	// Ridge regularises the least squares on the support (V = Ridge I +
	// sum x_S x_S^T); it only matters while the support's Gram matrix is
	// singular.
	Ridge float64
}

// LassoBandit is the non-private thresholded LASSO bandit that 002's
// PrivateThresholdLASSO (Algorithm 1) privatises: at t in L = {1, 2, 4,
// ...} it fits the LASSO on the whole history (Lasso, warm-started from
// the last fit) with
//
//	lambda_t = Lambda0 sqrt(2 ln t ln d / (t d)),
//
// keeps the support S_t = {j : |theta^_j| > 4 lambda_t} (Algorithm 2,
// line 3, without the private pass) until the next re-estimation, and at
// every step plays argmax_k <X_{t,k}, theta~_t> with theta~_t the least
// squares on the history restricted to S_t (Algorithm 1, lines 12-13).
//
// Normalisation. Algorithm 1 line 7 prints lambda_t = lambda_0 sqrt(2
// log t log d / t). Contexts of norm at most 1 in R^d have coordinates of
// scale 1/sqrt(d), and the LASSO's (1/(2n)) objective (Lasso) then needs
// a penalty 1/sqrt(d) smaller for the same selection: the 1/d under the
// root makes Lambda0 independent of d (its default recovers the support
// on the preset's instances at d = 100 and 1000, TestLassoBanditRecovers).
//
// Cost: the history (t rows of d floats) is kept for the LASSO, whose
// fits cost O(t d) per sweep at the O(log T) re-estimations; a step costs
// O(K s + s^3) on the support (s = |S_t|): the support's Gram matrix and
// regressor are rebuilt at each re-estimation in O(t s^2) and updated in
// O(s^2) per step.
type LassoBandit struct {
	greedy
	cfg    Config
	z      [][]float64
	theta  []float64 // last LASSO fit (warm start)
	lambda float64
	gram   []float64 // Ridge I + sum x_S x_S^T, s x s
	b      []float64 // sum x_S r
}

// greedy is what the LASSO bandits share: the re-estimation schedule t in
// {1, 2, 4, ...}, the support and the coefficients on it, and the greedy
// choice (002 Algorithm 1, lines 6-13).
type greedy struct {
	bounds     mechanism.Bounds
	d          int
	y          []float64
	next       int64
	supp       []int
	coef       []float64
	stale      bool
	chosen     []float64
	reestimate func(t int64) error // at t in L
	solve      func() error        // sets coef when stale
}

// Choose re-estimates the support at t in L, then plays the action of
// largest estimated reward (the first on ties).
func (g *greedy) Choose(actions [][]float64) (int, error) {
	if g.chosen != nil {
		return 0, inputf("Choose twice without Update")
	}
	if err := mechanism.CheckActions(actions, g.d); err != nil {
		return 0, err
	}
	t := int64(len(g.y)) + 1
	if t == g.next {
		if err := g.reestimate(t); err != nil {
			return 0, err
		}
		g.next *= 2
	}
	if g.stale {
		if err := g.solve(); err != nil {
			return 0, err
		}
		g.stale = false
	}
	best, top := 0, math.Inf(-1)
	for k, a := range actions {
		v := 0.0
		for i, j := range g.supp {
			v += a[j] * g.coef[i]
		}
		if v > top {
			best, top = k, v
		}
	}
	g.chosen = slices.Clone(actions[best])
	return best, nil
}

// take records the chosen action's reward, clipped to the range, and
// returns the action (the policy's own copy) and the clipped reward.
func (g *greedy) take(reward float64) ([]float64, float64, error) {
	if g.chosen == nil {
		return nil, 0, inputf("Update without Choose")
	}
	r, err := g.bounds.Clip(reward)
	if err != nil {
		return nil, 0, err
	}
	x := g.chosen
	g.y, g.chosen, g.stale = append(g.y, r), nil, true
	return x, r, nil
}

// Support returns the current support estimate.
func (g *greedy) Support() []int { return slices.Clone(g.supp) }

// Episodes returns the number of support re-estimations.
func (g *greedy) Episodes() int64 { return int64(bits.Len64(uint64(g.next - 1))) }

// NewLassoBandit returns the policy.
func NewLassoBandit(s contextual.Setting, c Config) (*LassoBandit, error) {
	if s.Dim < 1 {
		return nil, inputf("dimension %d", s.Dim)
	}
	if err := s.Bounds.Validate(); err != nil {
		return nil, err
	}
	if !(c.Lambda0 > 0) || math.IsInf(c.Lambda0, 0) {
		return nil, inputf("lambda0 must be positive and finite, got %v", c.Lambda0)
	}
	if !(c.CTheta > 0) {
		return nil, inputf("C_theta must be positive, got %v", c.CTheta)
	}
	if !(c.Ridge > 0) || math.IsInf(c.Ridge, 0) {
		return nil, inputf("the ridge must be positive and finite, got %v", c.Ridge)
	}
	p := &LassoBandit{cfg: c, greedy: greedy{bounds: s.Bounds, d: s.Dim, next: 1}}
	p.reestimate, p.solve = p.refit, p.leastSquares
	return p, nil
}

// Update records the chosen action's reward, clipped to the range.
func (p *LassoBandit) Update(reward float64) error {
	x, r, err := p.take(reward)
	if err != nil {
		return err
	}
	p.z = append(p.z, x)
	s := len(p.supp)
	for i, j := range p.supp {
		p.b[i] += x[j] * r
		for k, l := range p.supp {
			p.gram[i*s+k] += x[j] * x[l]
		}
	}
	return nil
}

// refit fits the LASSO and sets the support, its Gram matrix and
// regressor.
func (p *LassoBandit) refit(t int64) error {
	p.lambda = Lambda(p.cfg.Lambda0, t, p.d)
	var supp []int
	if len(p.y) > 0 {
		theta, _, err := Lasso(p.z, p.y, p.lambda, p.cfg.CTheta, 1e-8, p.theta)
		if err != nil {
			return err
		}
		p.theta = theta
		supp = Screen(theta, 4*p.lambda)
	}
	p.setSupport(supp)
	return nil
}

// setSupport sets the support and rebuilds its Gram matrix and regressor
// from the history.
func (p *LassoBandit) setSupport(supp []int) {
	p.supp = supp
	s := len(p.supp)
	p.gram, p.b = make([]float64, s*s), make([]float64, s)
	for i := range s {
		p.gram[i*s+i] = p.cfg.Ridge
	}
	for n, x := range p.z {
		for i, j := range p.supp {
			p.b[i] += x[j] * p.y[n]
			for k, l := range p.supp {
				p.gram[i*s+k] += x[j] * x[l]
			}
		}
	}
	p.stale = true
}

// leastSquares computes the least squares on the support.
func (p *LassoBandit) leastSquares() error {
	s := len(p.supp)
	p.coef = make([]float64, s)
	if s == 0 {
		return nil
	}
	inv, ok := linalg.InvSPD(p.gram, s)
	if !ok {
		return liberr.New("sparse", "the support's Gram matrix is singular")
	}
	for i := range s {
		for k := range s {
			p.coef[i] += inv[i*s+k] * p.b[k]
		}
	}
	return nil
}

// Lambda returns lambda_t = lambda0 sqrt(2 ln t ln d / (t d)) (see
// LassoBandit), with ln t and ln d at least 1 so that t = 1, 2 and small
// d keep a positive penalty.
func Lambda(lambda0 float64, t int64, d int) float64 {
	lt, ld := max(math.Log(float64(t)), 1), max(math.Log(float64(d)), 1)
	return lambda0 * math.Sqrt(2*lt*ld/(float64(t)*float64(d)))
}

// Screen returns the coordinates of theta of magnitude above tau (002
// Algorithm 2, line 3), increasing.
func Screen(theta []float64, tau float64) []int {
	var s []int
	for j, x := range theta {
		if math.Abs(x) > tau {
			s = append(s, j)
		}
	}
	return s
}
