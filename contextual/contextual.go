// Package contextual holds linear contextual bandits (seed 001, Section
// IV-B): at each step the policy is served a decision set A_t of action
// vectors, chooses one, and observes a reward <theta*, a_t> + eta_t. The
// decision sets are public (Remark 4): the privacy guarantees of this
// package protect the rewards only.
//
// OFUL (Abbasi-Yadkori, Pal and Szepesvari 2011), its rarely switching
// version RS-OFUL and the private AdaC-OFUL (Algorithm 3 of seed 001) share
// one implementation. Each step costs O(d^2 K): V^-1 is kept by
// Sherman-Morrison and log det V by the matrix determinant lemma. Both are
// recomputed exactly, with lambda_min(V) for AdaC-OFUL's radius, at a
// re-estimation when the steps since the last exact computation have
// served at least d actions (their O(d^2) work per action then pays for
// the O(d^3) computation), and every 2^16 steps, to bound floating-point
// drift.
//
// Every action must lie in the closed unit ball exactly, in floating
// point (mechanism.InUnitBall; mechanism.IntoUnitBall scales a vector
// there): a policy refuses others, since the privacy proof bounds a
// reward's effect by ||a|| <= 1. A policy, and Delayed around it, is not
// safe for concurrent use (Concurrent is about decisions taken while
// earlier rewards are pending, not about goroutines): a server
// serialises the calls to each, as the decision service does.
package contextual

import (
	"math"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Policy chooses actions from per-step decision sets.
type Policy interface {
	// Choose returns the index of the chosen action in actions (K vectors
	// of dimension d, norms at most 1). It is an error to call it twice
	// without an Update.
	Choose(actions [][]float64) (int, error)
	// Update reports the reward of the chosen action.
	Update(reward float64) error
}

// Setting is what a contextual policy is told when it is built.
type Setting struct {
	// Dim is d, the dimension of the actions.
	Dim int
	// Horizon is T (0 if unknown; AdaC-OFUL needs it for its radius).
	Horizon int64
	// Bounds is the declared reward range; rewards outside are clipped.
	Bounds mechanism.Bounds
	// Noise is where private policies draw their noise.
	Noise noise.Noise
	// Rand is the policy's own randomness (Uniform's draws).
	Rand *rand.Rand
	// Calibrations, if set, is shared by the policies built from one
	// configuration, so that each calibration is computed once.
	Calibrations *mechanism.Calibrations
}

// Config holds the parameters of the OFUL family.
type Config struct {
	// Lambda is the ridge regulariser (V_0 = lambda I).
	Lambda float64
	// Delta is the confidence parameter of the radius.
	Delta float64
	// S bounds ||theta*||.
	S float64
	// C is the doubling schedule: re-estimate when det V_{t-1} > (1+C)
	// det V_tau. C = 0 re-estimates at every step (OFUL) and is rejected
	// with a private budget, which needs C > 0 (releases happen only at
	// re-estimations of the doubling schedule).
	C float64
	// Budget is privacy.None() for OFUL and RS-OFUL, a zCDP, (eps,delta)
	// or Renyi budget for AdaC-OFUL.
	Budget privacy.Budget
	// Scale multiplies the radius beta~ by which the choice is
	// optimistic; 0 means 1, 001's radius (the zero Config's). A scale
	// below 1 is our tuning, not 001's (docs/algorithms.md): the regret
	// bound of Theorem 14 assumes the full radius. The releases do not
	// depend on it: the choice is post-processing of them and of V.
	Scale float64
	// Greedy chooses argmax_a <theta~, a> (beta~ = 0, whatever Scale):
	// the released estimate's greedy choice, our variant, for a caller
	// that explores by itself (the decision service's exploration).
	Greedy bool
}

// OFUL is OFUL (C = 0, non-private), RS-OFUL (C > 0, non-private) or
// AdaC-OFUL (private; Algorithm 3 of seed 001).
//
// It keeps V_t = lambda I + sum_s a_s a_s^T. At the first step and
// whenever det V_{t-1} > (1 + C) det V_tau it re-estimates (tau = t - 1):
//
//	theta~ = V_tau^-1 (sum_{s<=tau} a_s r_s + sum_{m<=l} Y_m),
//
// where Y_m is the Gaussian noise of the m-th release (none when
// non-private): at each re-estimation the reward statistic
// sum_{s in episode} a_s r_s of the episode that just ended is released
// once by the Gaussian mechanism for its L2 sensitivity w (width of the
// reward range, with ||a|| <= 1; 2 for [-1, 1], giving the paper's
// N(0, (2/rho) I)), and the noisy sums are accumulated (post-processing of
// releases on disjoint data, Lemma 1). It plays
//
//	a_t = argmax_a <theta~, a> + beta~_tau ||a||_{V_tau^-1},
//	beta_t = sqrt(2 ln(1/delta) + ln(det V_t / lambda^d)) + sqrt(lambda) S,
//	beta~_t = beta_t + sqrt(l sigma^2 f(d, delta/T) / lambda_min(V_t)),
//	f(d, x) = d + 2 sqrt(d ln(1/x)) + 2 ln(1/x),
//
// the private term being Theorem 14's bound on ||N_t||_{V_t^-1} for the
// accumulated noise N_t ~ N(0, l sigma^2 I) (l releases of standard
// deviation sigma). Theorem 14 lower-bounds lambda_min(V_t) by
// lambda + lambda_0 t/4 - ..., which is vacuous (negative) for small t;
// V_t depends only on the public decision sets and the chosen actions, so
// the observed lambda_min is used instead (docs/algorithms.md): the
// one of V at the last exact computation (see the package comment), a
// lower bound on lambda_min(V_tau) because V only grows (V_tau - V_s is a
// sum of a a^T, so by Weyl's inequality lambda_min(V_tau) >=
// lambda_min(V_s)). It equals lambda_min(V_tau) whenever the steps since
// the last exact computation served d actions or more (always when d <=
// K), and keeps a re-estimation O(d^2) at large d, where early episodes
// last a step each (det V doubles in about one step while V is near
// lambda I): the exact computation (eigendecomposition and inverse)
// costs ~0.5 s at d = 1000.
// T is the horizon (the radius holds uniformly over [1, T]). Config.Scale
// multiplies beta~ and Config.Greedy sets it to 0 (our variants, not
// 001's): the releases, theta~ and V are the same, only the choice
// changes, so the privacy guarantee is the same (post-processing).
type OFUL struct {
	cfg    Config
	d      int
	bounds mechanism.Bounds
	nz     noise.Noise
	T      int64
	mech   *mechanism.Gaussian

	v    []float64 // V_t, row-major
	vinv []float64 // V_t^-1, by Sherman-Morrison
	// log det V_t = logdet + log ratio: logdet is exact at the last
	// refresh, ratio = det V_t / det V_refresh follows the determinant
	// lemma (a product of 1 + a^T V^-1 a: no logarithm per step), and the
	// doubling condition det V_t > (1+C) det V_tau is ratio > thresh.
	logdet, ratio, thresh float64
	sums                  mechanism.Sums // sum_s a_s r_s since the last re-estimation (clipped rewards; exact too on exact noise)
	b                     []float64      // sums.F
	nsum                  []float64      // accumulated noisy block sums

	theta      []float64 // theta~
	tauInv     []float64 // V_tau^-1
	radius     float64   // beta~_tau
	episodes   int64
	t          int64
	sinceFresh int64
	// served counts the actions of the decision sets since the last
	// exact computation, lmin is lambda_min(V) there.
	served int64
	lmin   float64
	blocks [][]int // V's blocks at the last exact computation (nil: dense)

	pending []float64 // the chosen action (a copy), until Update
	chosen  []float64 // pending's storage
	tmp     []float64
	quad    []float64 // a^T V_tau^-1 a for the decision set
	spans   []span    // the spans of its actions
	rows    []span    // the spans of V^-1's rows (spans.go)
	dense   bool      // every row's span is whole
	tauRows []span    // the spans of V_tau^-1's rows

	// The dense kernels (dense.go): tauDense is dense at the last tau;
	// synced says V_tau^-1 equals V^-1 (a dense tau copied it and no
	// update came since), and then uReady that ys[uAt] is V^-1 a for the
	// action Choose or Take returned, which add uses.
	// fuseTau asks rankOne for tau's theta~ in its pass over V^-1
	// (OFUL's Update), tauDone says it made it. shared says V_tau^-1 is
	// V^-1 itself, not copied (OFUL on dense V^-1: tau makes every
	// update an episode's end), until an update that no tau follows.
	// vStale says the dense updates left V behind: the nlog updates
	// s a a^T of vlog and vsign wait, and its lower triangle.
	tauDense, synced, uReady bool
	fuseTau, tauDone, shared bool
	vStale                   bool
	vlog                     [][]float64
	vsign                    [linalg.MaxPending]float64
	nlog                     int
	uAt                      int
	ys                       [][]float64 // V_tau^-1 a for each action of a decision set
}

// New returns a policy of the OFUL family for the setting.
func New(s Setting, c Config) (*OFUL, error) {
	if s.Dim < 1 {
		return nil, inputf("dimension must be positive, got %d", s.Dim)
	}
	if err := s.Bounds.Validate(); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name string
		v    float64
		ok   bool
	}{
		{"lambda", c.Lambda, c.Lambda > 0},
		{"delta", c.Delta, c.Delta > 0 && c.Delta < 1},
		{"S", c.S, c.S >= 0},
		{"C", c.C, c.C >= 0},
		{"Scale", c.Scale, c.Scale >= 0},
	} {
		if !p.ok || math.IsInf(p.v, 0) {
			return nil, inputf("bad %s = %v", p.name, p.v)
		}
	}
	if err := c.Budget.Validate(); err != nil {
		return nil, err
	}
	d := s.Dim
	o := &OFUL{cfg: c, d: d, bounds: s.Bounds, nz: s.Noise, T: max(s.Horizon, 1),
		v: make([]float64, d*d), vinv: make([]float64, d*d), nsum: make([]float64, d),
		sums:  mechanism.NewSums(d, c.Budget.IsPrivate() && mechanism.ExactFor(s.Noise)),
		theta: make([]float64, d), tauInv: make([]float64, d*d), tmp: make([]float64, d),
		rows: make([]span, d), tauRows: make([]span, d)}
	if c.Budget.IsPrivate() {
		if c.C == 0 {
			// With C = 0 every step re-estimates from the exact sums
			// (the OFUL path of Update) and nothing is ever released:
			// the policy would not be private at any budget.
			return nil, inputf("AdaC-OFUL needs c > 0 with a private budget (%s): with c = 0 it re-estimates from the exact reward sums at every step and adds no noise", c.Budget)
		}
		if err := noise.Check(s.Noise); err != nil {
			return nil, inputf("a private policy: %w", err)
		}
		if s.Horizon < 1 {
			return nil, inputf("AdaC-OFUL needs the horizon for its confidence radius")
		}
		m, err := mechanism.NewGaussian(c.Budget, s.Bounds.Width(), s.Noise)
		if err != nil {
			return nil, err
		}
		o.mech = &m
	}
	for i := range d {
		o.v[i*d+i] = c.Lambda
		o.vinv[i*d+i] = 1 / c.Lambda
	}
	o.b = o.sums.F
	o.logdet, o.ratio = float64(d)*math.Log(c.Lambda), 1
	return o, o.reestimate()
}

// reestimate releases the episode's reward statistic (if private),
// recomputes V^-1 and log det V exactly, and sets theta~ and beta~.
func (o *OFUL) reestimate() error {
	d := o.d
	if o.t > 0 || o.episodes > 0 {
		for i := range d {
			o.nsum[i] += o.b[i]
		}
		if o.mech != nil {
			noisy, err := o.mech.ReleaseSums(o.sums, 1)
			if err != nil {
				return err
			}
			for i := range d {
				o.nsum[i] += noisy[i] - o.b[i]
			}
		}
		o.sums.Reset()
	}
	if o.episodes == 0 || o.served >= int64(d) {
		if err := o.refresh(); err != nil {
			return err
		}
		if o.mech != nil {
			lmin, err := o.lambdaMin()
			if err != nil {
				return err
			}
			o.lmin = lmin
		}
		o.served = 0
	}
	o.tau()
	if o.mech != nil {
		sig := o.mech.Sigma()
		x := o.cfg.Delta / float64(o.T)
		f := float64(d) + 2*math.Sqrt(float64(d)*math.Log(1/x)) + 2*math.Log(1/x)
		o.radius += math.Sqrt(float64(o.episodes-1) * sig * sig * f / o.lmin)
	}
	o.scaleRadius()
	return nil
}

// scaleRadius applies Config.Scale and Config.Greedy to beta~.
func (o *OFUL) scaleRadius() {
	switch {
	case o.cfg.Greedy:
		o.radius = 0 // the index is <theta~, a>
	case o.cfg.Scale != 0:
		o.radius *= o.cfg.Scale
	}
}

// tau makes the current step the last re-estimation: V_tau = V_t,
// theta~ = V_t^-1 (accumulated sums) and beta_tau (without the private
// term).
func (o *OFUL) tau() {
	d := o.d
	o.tauDense, o.synced = o.dense, o.dense
	done := o.tauDone
	o.tauDone = false
	o.shared = o.cfg.C == 0 && o.dense && d >= linalg.StripLanes
	switch {
	case o.shared:
		copy(o.tauRows, o.rows) // V_tau^-1 is V^-1
	case o.dense:
		copy(o.tauInv, o.vinv)
		copy(o.tauRows, o.rows)
	default:
		for i, r := range o.rows {
			c := r.union(o.tauRows[i]) // zero outside both
			copy(o.tauInv[i*d+c.lo:i*d+c.hi], o.vinv[i*d+c.lo:i*d+c.hi])
			o.tauRows[i] = r
		}
	}
	switch {
	case done: // made by rankOne
	case o.dense && d >= linalg.StripLanes:
		linalg.Rows(o.vinv, d, o.nsum, o.theta)
	default:
		for i, r := range o.rows {
			o.theta[i] = linalg.DotWithin(o.vinv[i*d:i*d+d], o.nsum, r.lo, r.hi)
		}
	}
	logdet := o.logdet + math.Log(o.ratio)
	if o.ratio > 1e100 {
		// Between exact refreshes det V may grow by up to (1 + 1/lambda)
		// per step: fold the ratio into the base before it overflows.
		o.rebase(logdet)
	}
	o.thresh = o.ratio * (1 + o.cfg.C)
	o.episodes++
	// ln(det V_t / lambda^d) >= 0; rounding can make it slightly negative.
	o.radius = math.Sqrt(max(2*math.Log(1/o.cfg.Delta)+logdet-float64(d)*math.Log(o.cfg.Lambda), 0)) + math.Sqrt(o.cfg.Lambda)*o.cfg.S
}

// refresh recomputes V^-1 and log det V from V, block by block when V is
// block-diagonal (blocks).
func (o *OFUL) refresh() error {
	o.unshare()
	o.syncV()
	o.blocks = blocks(o.v, o.d)
	var logdet float64
	if o.blocks != nil {
		var err error
		if logdet, err = o.invLogDetBlocks(o.blocks); err != nil {
			return err
		}
	} else {
		inv, ld, ok := linalg.InvLogDetSPD(o.v, o.d)
		if !ok {
			return liberr.New("contextual", "V is not positive definite")
		}
		copy(o.vinv, inv)
		logdet = ld
	}
	rowSpans(o.rows, o.vinv, o.d)
	o.dense = full(o.rows, o.d)
	o.synced, o.tauDone = false, false
	o.rebase(logdet)
	o.sinceFresh = 0
	return nil
}

// rebase makes logdet the base of the determinant ratio (ratio = 1). The
// threshold of the doubling condition is kept relative to the new base:
// thresh / ratio is unchanged.
func (o *OFUL) rebase(logdet float64) {
	o.thresh /= o.ratio
	o.logdet, o.ratio = logdet, 1
}

// lambdaMin returns the smallest eigenvalue of V, the least of its
// blocks' when refresh found V block-diagonal.
func (o *OFUL) lambdaMin() (float64, error) {
	o.syncV()
	if o.blocks == nil {
		return eigMin(o.v, o.d)
	}
	least := math.Inf(1)
	for _, b := range o.blocks {
		l, err := eigMin(sub(o.v, o.d, b), len(b))
		if err != nil {
			return 0, err
		}
		least = min(least, l)
	}
	return least, nil
}

// Choose returns the optimistic action.
func (o *OFUL) Choose(actions [][]float64) (int, error) {
	if o.pending != nil {
		return 0, inputf("Choose called twice without Update")
	}
	if len(actions) == 0 {
		return 0, inputf("empty decision set")
	}
	// Re-estimate when det V_{t-1} > (1 + C) det V_tau.
	if !o.Open() {
		if err := o.reestimate(); err != nil {
			return 0, err
		}
	}
	best, err := o.index(actions)
	if err != nil {
		return 0, err
	}
	// A copy: the caller may reuse its decision sets before Update
	// (delayed rewards).
	o.chosen = append(o.chosen[:0], actions[best]...)
	o.pending = o.chosen
	return best, nil
}

// Open reports whether the current episode takes more decisions: until
// det V > (1 + C) det V_tau (V holding every action taken), after which
// the episode's statistic must be released (Reestimate) first.
func (o *OFUL) Open() bool { return !(o.t > 0 && o.ratio > o.thresh) }

// index returns the optimistic action of the decision set for theta~,
// beta~ and V_tau^-1 (fixed within an episode), checking the actions.
func (o *OFUL) index(actions [][]float64) (int, error) {
	if len(actions) == 0 {
		return 0, inputf("empty decision set")
	}
	switch {
	case o.d == 3:
		return o.index3(actions)
	case o.d <= smallDim:
		return o.indexSmall(actions)
	}
	d := o.d
	if cap(o.quad) < len(actions) {
		o.quad = make([]float64, len(actions))
		o.spans = make([]span, len(actions))
	}
	q, spans := o.quad[:len(actions)], o.spans[:len(actions)]
	all := span{}
	for k, a := range actions {
		if len(a) != d {
			// The error of the first bad action, its norm or its
			// dimension, as if every action were checked in turn.
			for j, b := range actions[:k] {
				if err := checkNorm(j, linalg.DotWithin(b, b, spans[j].lo, spans[j].hi)); err != nil {
					return 0, err
				}
			}
			return 0, inputf("action %d has dimension %d, want %d", k, len(a), d)
		}
		s := nonzero(a)
		spans[k], all = s, all.union(s)
	}
	if o.tauDense && all == (span{0, d}) && denseSpans(spans, d) {
		return o.indexDense(actions) // the norms checked there, in one pass with the index
	}
	for k, a := range actions {
		if err := checkNorm(k, linalg.DotWithin(a, a, spans[k].lo, spans[k].hi)); err != nil {
			return 0, err
		}
	}
	// a^T V_tau^-1 a for every action in one pass over the rows of
	// V_tau^-1, which is symmetric: the diagonal plus twice the upper
	// triangle. Each row is read once, from cache for all the actions;
	// a zero coordinate adds an exact zero, and is skipped (spans.go).
	clear(q)
	m := o.tauM()[:d*d]
	for i := all.lo; i < all.hi; i++ {
		row := m[i*d : i*d+d]
		for k, a := range actions {
			x := a[i]
			if x == 0 {
				continue
			}
			var t float64
			if hi := spans[k].hi; hi < d {
				t = linalg.DotWithin(row[i+1:], a[i+1:d], 0, hi-i-1)
			} else {
				t = linalg.Dot(row[i+1:], a[i+1:d]) // the same, without the span's arithmetic
			}
			q[k] += x * (0.5*row[i]*x + t)
		}
	}
	best, bv := -1, math.Inf(-1)
	for k, s := range spans {
		best, bv = keepMax(best, bv, k, linalg.DotWithin(o.theta, actions[k], s.lo, s.hi)+o.radius*math.Sqrt(max(2*q[k], 0)))
	}
	return o.pick(best, len(actions))
}

// smallDim is the largest d that indexSmall serves: below 16 entries
// every linalg.Dot is a plain loop, summing in order, which indexSmall's
// loops repeat operation for operation, so that both choose the same
// action to the last bit.
const smallDim = linalg.Short - 1

// indexSmall is index for d <= smallDim: one pass per action, in which
// the squared norm, <theta~, a> and a^T V_tau^-1 a (the diagonal plus
// twice the upper triangle, as index sums it) are accumulated together,
// with no call and no slice made per entry.
func (o *OFUL) indexSmall(actions [][]float64) (int, error) {
	d := o.d
	m, theta := o.tauInv[:d*d], o.theta[:d]
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		if len(a) != d {
			return 0, inputf("action %d has dimension %d, want %d", k, len(a), d)
		}
		nn, lin, q := 0.0, 0.0, 0.0
		for i, x := range a {
			nn += x * x
			lin += theta[i] * x
			row := m[i*d : i*d+d]
			t := 0.0
			for j := i + 1; j < d; j++ {
				t += row[j] * a[j]
			}
			q += x * (0.5*row[i]*x + t)
		}
		if !(nn <= 1) {
			return 0, checkNorm(k, nn)
		}
		best, bv = keepMax(best, bv, k, lin+o.radius*math.Sqrt(max(2*q, 0)))
	}
	return o.pick(best, len(actions))
}

// index3 is indexSmall for d = 3 (the instances of seed 001's Figure 4),
// with V_tau^-1 and theta~ held in registers for the whole decision set
// and every loop written out: the same operations in the same order as
// indexSmall, hence the same action to the last bit.
func (o *OFUL) index3(actions [][]float64) (int, error) {
	m, th := (*[9]float64)(o.tauInv), (*[3]float64)(o.theta)
	m00, m01, m02, m11, m12, m22 := m[0], m[1], m[2], m[4], m[5], m[8]
	th0, th1, th2 := th[0], th[1], th[2]
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		if len(a) != 3 {
			return 0, inputf("action %d has dimension %d, want 3", k, len(a))
		}
		x0, x1, x2 := a[0], a[1], a[2]
		nn, lin, q := 0.0, 0.0, 0.0
		nn += x0 * x0
		nn += x1 * x1
		nn += x2 * x2
		lin += th0 * x0
		lin += th1 * x1
		lin += th2 * x2
		// Row i's part right of the diagonal, summed from 0 as
		// indexSmall's inner loop does.
		u0, u1, u2 := 0.0, 0.0, 0.0
		u0 += m01 * x1
		u0 += m02 * x2
		u1 += m12 * x2
		q += x0 * (0.5*m00*x0 + u0)
		q += x1 * (0.5*m11*x1 + u1)
		q += x2 * (0.5*m22*x2 + u2)
		if !(nn <= 1) {
			return 0, checkNorm(k, nn)
		}
		best, bv = keepMax(best, bv, k, lin+o.radius*math.Sqrt(max(2*q, 0)))
	}
	return o.pick(best, len(actions))
}

// keepMax returns (k, v) if v > bv and (best, bv) otherwise (so never
// for a NaN v), the step of an argmax that keeps the first of equal
// maxima. It has no branch: the maximum of a decision set changes at
// unpredictable actions, and a mispredicted branch per change cost about
// a third of index3's time (AdaC-OFUL at d = 3, K = 10).
func keepMax(best int, bv float64, k int, v float64) (int, float64) {
	var gt uint64
	if v > bv {
		gt = 1 // SETcc: the comparison's flag as a value, not a branch
	}
	m := -gt // all ones when v > bv
	b := math.Float64bits(bv)
	return best ^ (best^k)&int(m), math.Float64frombits(b ^ (b^math.Float64bits(v))&m)
}

// pick counts the k actions of a decision set served and returns its
// optimistic one, best (-1 if no index was finite).
func (o *OFUL) pick(best, k int) (int, error) {
	if best < 0 {
		return 0, liberr.New("contextual", "no action has a finite index (radius %v)", o.radius)
	}
	o.served += int64(k)
	return best, nil
}

// checkNorm returns the error of action k of squared norm nn, if any:
// the privacy proof needs ||a|| <= 1 (exactly mechanism.InUnitBall), and
// a NaN or infinite coordinate makes the norm NaN or infinite.
func checkNorm(k int, nn float64) error {
	switch {
	case nn != nn || math.IsInf(nn, 0):
		return inputf("action %d has a non-finite coordinate", k)
	case nn > 1:
		return inputf("action %d has squared norm %v > 1; the privacy proof needs ||a|| <= 1 exactly, in floating point: scale it with mechanism.IntoUnitBall (a / ||a|| computed in floating point may lie an ulp outside), or norm=rescale in a contextual-gauss spec (the data set environments always scale their actions into the ball)", k, nn)
	}
	return nil
}

// Take is Choose for decisions taken while earlier rewards are pending
// (Delayed): it chooses within the open episode and adds the action to V
// at once, V depending on the chosen actions alone; the reward comes
// later by Give, or never (Withdraw). The choice uses only theta~, beta~
// and V_tau^-1, fixed within the episode, so the decisions are those of
// the sequential policy.
func (o *OFUL) Take(actions [][]float64) (int, error) {
	if !o.Open() {
		return 0, inputf("the episode is over: Reestimate first")
	}
	k, err := o.index(actions)
	if err != nil {
		return 0, err
	}
	return k, o.add(actions[k])
}

// Give adds the reward of a taken action a to the episode's statistic
// (clipped to the range).
func (o *OFUL) Give(a []float64, reward float64) error {
	r, err := o.bounds.Clip(reward)
	if err != nil {
		return err
	}
	o.sums.AddScaled(a, r)
	return nil
}

// Withdraw removes a taken action whose reward will never come from V
// (a Sherman-Morrison downdate, det V shrinking by 1 - a^T V^-1 a): V and
// the statistic are as if it was never taken.
func (o *OFUL) Withdraw(a []float64) error {
	o.uReady = false // a is not the action index chose
	if err := o.rankOne(a, -1); err != nil {
		return err
	}
	o.t--
	o.sinceFresh++
	return nil
}

// Enter adds a withdrawn action a whose reward r came after all to the
// current episode: a enters V (V^-1 and the determinant ratio) and r a
// the episode's statistic, as Take and Give would; the episode may then
// end (Open) and waits for its re-estimation as after a Take.
func (o *OFUL) Enter(a []float64, reward float64) error {
	if len(a) != o.d {
		return inputf("action has dimension %d, want %d", len(a), o.d)
	}
	o.uReady = false // a is not the action index chose
	if err := o.add(a); err != nil {
		return err
	}
	return o.Give(a, reward)
}

// Reestimate ends the episode once its rewards are in (given or
// withdrawn): the release and re-estimation Choose makes at an episode's
// end (every step for OFUL, C = 0, as Update does).
func (o *OFUL) Reestimate() error {
	if o.cfg.C == 0 {
		for i := range o.d {
			o.nsum[i] += o.b[i]
		}
		o.sums.Reset()
		o.tau()
		o.scaleRadius()
		return nil
	}
	return o.reestimate()
}

// add puts a chosen action into V, V^-1 (Sherman-Morrison) and the
// determinant ratio, in O(d^2), with an exact refresh every 2^16.
func (o *OFUL) add(a []float64) error {
	if err := o.rankOne(a, 1); err != nil {
		return err
	}
	o.t++
	o.sinceFresh++
	if o.sinceFresh >= 1<<16 {
		return o.refresh()
	}
	return nil
}

// rankOne adds s a a^T to V (s = 1: a chosen action; s = -1: a withdrawn
// one) and updates V^-1 by Sherman-Morrison and the determinant ratio by
// the determinant lemma: with u = V^-1 a and q = a^T u, V^-1 gains
// -s u u^T / (1 + s q) and det V the factor 1 + s q, which must stay
// positive (a withdrawn action V holds has q < 1).
//
// Sparse actions (the disjoint-arm encoding of the data set
// environments) touch only the spans of their non-zero coordinates and
// of the rows of V^-1 that meet them (spans.go): the same values as the
// dense computation, which TestSparseActionsAsDense keeps as the oracle
// (only the sign of a zero entry may differ, and no result sees it:
// every use of V^-1 is a sum that starts at +0 or a product added to
// one).
func (o *OFUL) rankOne(a []float64, s float64) error {
	d := o.d
	o.unshare()
	ready := o.uReady
	o.uReady, o.synced = false, false
	if o.dense && d >= linalg.StripLanes {
		return o.rankOneDense(a, s, ready)
	}
	o.syncV()
	vinv, u := o.vinv[:d*d], o.tmp[:d]
	sa, su := span{0, d}, span{0, d} // the spans of a and of u = V^-1 a
	// Below linalg.Short the loops of Dot and AddScaled are inlined:
	// at d = 3 the calls cost as much as the arithmetic.
	short := d < linalg.Short
	if o.dense {
		for i := range d {
			if short {
				u[i] = linalg.DotShort(vinv[i*d:i*d+d], a)
			} else {
				u[i] = linalg.Dot(vinv[i*d:i*d+d], a)
			}
		}
	} else {
		sa, su = nonzero(a), span{d, 0}
		if sa.empty() {
			return nil // a = 0: a a^T adds nothing to V, V^-1 or det V
		}
		for i, r := range o.rows[:d] {
			ui := 0.0
			if c := r.meet(sa); !c.empty() {
				ui = linalg.DotWithin(vinv[i*d:i*d+d], a, c.lo, c.hi)
			}
			u[i] = ui
			if ui != 0 {
				su.lo, su.hi = min(su.lo, i), i+1
			}
		}
	}
	q := linalg.DotWithin(a, u, sa.lo, sa.hi)
	den := 1 + s*q
	if !(den > 0) {
		return denError(s, q)
	}
	as := a[sa.lo:sa.hi]
	for i := sa.lo; i < sa.hi; i++ {
		if x := a[i]; x != 0 && short {
			linalg.AddScaledShort(o.v[i*d+sa.lo:i*d+sa.hi], s*x, as)
		} else if x != 0 {
			linalg.AddScaled(o.v[i*d+sa.lo:i*d+sa.hi], s*x, as)
		}
	}
	c, us := -(s / den), u[su.lo:su.hi]
	for i := su.lo; i < su.hi; i++ {
		if y := u[i]; y != 0 {
			if short {
				linalg.AddScaledShort(vinv[i*d+su.lo:i*d+su.hi], c*y, us)
			} else {
				linalg.AddScaled(vinv[i*d+su.lo:i*d+su.hi], c*y, us)
			}
			if !o.dense {
				r := &o.rows[i] // not empty: it met a's span
				r.lo, r.hi = min(r.lo, su.lo), max(r.hi, su.hi)
			}
		}
	}
	if !o.dense {
		o.dense = full(o.rows, d)
	}
	o.ratio *= den
	return nil
}

// denError is the error of an update s a a^T whose determinant factor
// 1 + s q (q = a^T V^-1 a) is not positive.
func denError(s, q float64) error {
	if s < 0 {
		return inputf("withdrawing an action V does not hold (a^T V^-1 a = %v)", q)
	}
	return liberr.New("contextual", "V^-1 is no longer positive definite (a^T V^-1 a = %v)", q)
}

// Update records the reward of the chosen action: V, V^-1 and log det V
// are updated in O(d^2).
func (o *OFUL) Update(reward float64) error {
	if o.pending == nil {
		return inputf("Update without Choose")
	}
	r, err := o.bounds.Clip(reward)
	if err != nil {
		return err
	}
	a := o.pending
	o.pending = nil
	d := o.d
	o.sums.AddScaled(a, r)
	if o.cfg.C != 0 {
		return o.add(a)
	}
	// OFUL: re-estimate at every step (no noise), with exact refreshes
	// every 2^16 steps. The sums first, so that the update can make
	// V_tau^-1 and theta~ in its pass (dense.go).
	for i := range d {
		o.nsum[i] += o.b[i]
	}
	o.sums.Reset()
	o.fuseTau = true
	err = o.add(a)
	o.fuseTau = false
	if err != nil {
		return err
	}
	o.tau()
	o.scaleRadius()
	return nil
}

// Episodes returns the number of re-estimations (the first included).
func (o *OFUL) Episodes() int64 { return o.episodes }

// Drift returns the largest absolute difference between the incremental
// V^-1 and a direct inverse of V: the floating-point drift the periodic
// refreshes bound.
func (o *OFUL) Drift() float64 {
	o.syncV()
	inv, _ := linalg.InvSPD(o.v, o.d)
	m := 0.0
	for i := range inv {
		m = math.Max(m, math.Abs(inv[i]-o.vinv[i]))
	}
	return m
}
