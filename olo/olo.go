// Package olo holds online learning (seed 003, Agarwal and Singh, "The
// Price of Differential Privacy for Online Learning"). In full
// information: FTRL with the entropic regulariser over the simplex of N
// experts (Hedge) and with the squared norm over the ball and the cube,
// FTPL, and their private versions on TreeBasedAgg sums (Algorithms 1-3,
// Corollary 3.2, Theorem 3.5). With bandit feedback: EXP2 with exploration
// (Algorithm 5) and SCRiBLE on the ball, each with the private reduction of
// Algorithm 4 (Theorems 4.1 and 4.5). Expert losses lie in [0, 1]^N (values
// outside are clipped), ball and cube losses in the dual unit ball (larger
// ones are scaled back); NaN and infinities are errors.
//
// Regret is against the best fixed point of the decision set in
// hindsight, sum_t <l_t, x_t> - min_x sum_t <l_t, x>, where x_t is the
// learner's prediction at step t (for bandit learners, the expectation
// over its own draw of the played point), and is computed exactly.
package olo

import (
	"math"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Learner plays distributions over N experts or arms.
type Learner interface {
	// Play returns the distribution x_t played at this step (the caller
	// must not keep it) and, for a bandit learner, the arm drawn from it
	// (-1 for a full-information learner).
	Play() (x []float64, arm int, err error)
	// Observe reports the step's loss vector. A bandit learner reads only
	// the played arm's loss.
	Observe(loss []float64) error
}

// Setting is what a learner is told when it is built.
type Setting struct {
	N int
	T int64
	// Set is the decision set: "simplex" (experts, the default), "ball"
	// or "cube".
	Set   string
	Rand  *rand.Rand
	Noise noise.Noise
	// Counter chooses the continual counter of private FTRL
	// (FTRLExperts, FTRLQuad) under a budget other than pure eps-DP: ""
	// or mechanism.CounterTree for TreeBasedAgg (NewTreeAggFor), or
	// mechanism.CounterSmooth. Only counters whose releases all carry
	// identically distributed noise are accepted (see counterFor).
	Counter mechanism.CounterKind
}

var unit = mechanism.Unit

func check(s Setting, set string) error {
	if s.N < 2 || s.T < 1 {
		return inputf("need N >= 2 and T >= 1, got N=%d T=%d", s.N, s.T)
	}
	if got := s.Set; got != set && !(got == "" && set == "simplex") {
		return inputf("this learner plays on the %s, not the %s", set, got)
	}
	return nil
}

// softmax writes into x the distribution proportional to exp(-eta L).
func softmax(x, L []float64, eta float64) {
	m := L[0]
	for _, v := range L {
		if v < m {
			m = v
		}
	}
	s := 0.0
	for i, v := range L {
		x[i] = expNonPos(-eta * (v - m))
		s += x[i]
	}
	inv := 1 / s
	for i := range x {
		x[i] *= inv
	}
}

// FTRLExperts is FTRL over the simplex with the entropic regulariser
// R(x) = sum x_i log x_i, which plays x_t proportional to
// exp(-eta L~_{t-1}): Hedge (exponential weights) when L~ is the exact
// cumulative loss, and private FTRL (Algorithm 1 of seed 003, Corollary
// 3.2 case 1) when L~ comes from TreeBasedAgg, starting from L~_0, the sum
// of L draws: for an eps-DP budget with Laplace noise of scale
// lambda = N L / eps per node (N, the L1 diameter of [0,1]^N; L the
// number of tree levels), and for a rho-zCDP budget with Gaussian noise
// of standard deviation sqrt(N) sqrt(L/(2 rho)) per node (sqrt(N), the L2
// diameter; rho/L per level), the lower-error choice of
// mechanism.NewTreeAggFor.
//
// eta = sqrt(ln N / T) tunes Theorem 3.1's bound for the entropic
// regulariser (D_R = ln N, local dual norms at most 1 for losses in
// [0,1]): regret <= ln N/eta + eta T + D_Lap = 2 sqrt(T ln N) + D_Lap,
// where D_Lap = E[max_i Z_i - min_i Z_i] for the noise Z of a release
// (Theorem 3.1 with Laplace nodes, Theorem 3.4's general form with
// Gaussian ones).
type FTRLExperts struct {
	eta  float64
	L    []float64 // L~_{t-1}
	x    []float64
	l    []float64
	tree *mechanism.TreeAgg
	// counter replaces tree when Setting.Counter chooses another one.
	counter mechanism.Counter
}

// NewFTRLExperts returns Hedge (privacy.None()) or private FTRL for an
// eps-DP (or zCDP) budget.
func NewFTRLExperts(s Setting, b privacy.Budget) (*FTRLExperts, error) {
	if err := check(s, "simplex"); err != nil {
		return nil, err
	}
	f := &FTRLExperts{eta: math.Sqrt(math.Log(float64(s.N)) / float64(s.T)),
		L: make([]float64, s.N), x: make([]float64, s.N), l: make([]float64, s.N)}
	if b.IsPrivate() {
		if err := noise.Check(s.Noise); err != nil {
			return nil, inputf("a private learner: %w", err)
		}
		var err error
		// Losses in [0,1]^N: one changes by at most N in L1, sqrt(N) in L2.
		if f.counter, f.L, err = useCounter(s, b, math.Sqrt(float64(s.N))); err != nil {
			return nil, err
		}
		if f.counter != nil {
			return f, nil
		}
		if f.tree, err = mechanism.NewTreeAggFor(b, float64(s.N), math.Sqrt(float64(s.N)), s.N, s.T, s.Noise); err != nil {
			return nil, err
		}
		f.L = f.tree.Initial()
	}
	return f, nil
}

// Play returns exp(-eta L~) normalised.
func (f *FTRLExperts) Play() ([]float64, int, error) {
	softmax(f.x, f.L, f.eta)
	return f.x, -1, nil
}

// addLoss adds l to L~: through the counter when Setting.Counter chose
// one (release), else as accumulate does.
func addLoss(L *[]float64, c mechanism.Counter, tree *mechanism.TreeAgg, l []float64) error {
	if c != nil {
		return release(L, c, l)
	}
	return accumulate(L, tree, l)
}

// accumulate adds l to the cumulative loss L: exactly, or through the
// tree when private (L is then the tree's release).
func accumulate(L *[]float64, tree *mechanism.TreeAgg, l []float64) error {
	if tree == nil {
		for i, v := range l {
			(*L)[i] += v
		}
		return nil
	}
	r, err := tree.Add(l)
	if err == nil {
		*L = r
	}
	return err
}

// clipLoss copies loss into dst clipped to [0,1], rejecting NaN and Inf.
func clipLoss(dst, loss []float64) error {
	if len(loss) != len(dst) {
		return inputf("loss of dimension %d, want %d", len(loss), len(dst))
	}
	for i, v := range loss {
		if v-v != 0 { // NaN or infinite
			return inputf("loss %v is not a finite number", v)
		}
		dst[i] = min(max(v, 0), 1)
	}
	return nil
}

// Observe adds the loss to L~ (through the tree when private).
func (f *FTRLExperts) Observe(loss []float64) error {
	if err := clipLoss(f.l, loss); err != nil {
		return err
	}
	return addLoss(&f.L, f.counter, f.tree, f.l)
}

// EXP2 is EXP2 with uniform exploration on the N unit vectors (Algorithm 5
// of seed 003; EXP3-style): it plays p_t = (1 - gamma) q_t + gamma/N,
// draws i_t from p_t, estimates l~_t = e_{i_t} l_t(i_t)/p_t(i_t) and updates
// q_{t+1} proportional to q_t exp(-eta l~_t). The private version is the
// reduction of Algorithm 4: the learner is fed l_t(i_t) + <Z_t, e_{i_t}>,
// Z_t ~ Lap^N(lambda), lambda = B/eps from package privacy for B = 1 (losses
// in [0,1], so |<l, x>|/||x||_inf <= 1: Lemma 4.2), which makes it eps-DP.
// The parameters are Theorem 4.1's: eta = sqrt(ln N / (2 N T (1 + 2
// lambda^2 ln(NT)))), gamma = eta N sqrt(1 + 2 lambda^2 ln(NT)) (lambda = 0
// when non-private), gamma capped at 1 for short horizons.
type EXP2 struct {
	eta, gamma float64
	lambda     float64 // Laplace scale of the reduction (0 when non-private)
	T          int64
	logw       []float64 // log q_t, up to a constant
	p          []float64
	r          *rand.Rand
	lap        *mechanism.Laplace
	arm        int
}

// NewEXP2 returns EXP2 (privacy.None()) or private EXP2 for an eps-DP (or
// zCDP) budget.
func NewEXP2(s Setting, b privacy.Budget) (*EXP2, error) {
	lap, lambda, err := reduction(s, b, "simplex", 1)
	if err != nil {
		return nil, err
	}
	e := &EXP2{logw: make([]float64, s.N), p: make([]float64, s.N), r: s.Rand, arm: -1, T: s.T, lap: lap}
	n, T := float64(s.N), float64(s.T)
	k := 1 + 2*lambda*lambda*math.Log(n*T)
	e.eta = math.Sqrt(math.Log(n) / (2 * n * T * k))
	e.gamma = math.Min(1, e.eta*n*math.Sqrt(k))
	e.lambda = lambda
	return e, nil
}

// reduction checks the setting of a bandit learner on the set and returns
// the Laplace mechanism of Algorithm 4 (seed 003) for the loss set's L1
// diameter l1, with its scale lambda: nil and 0 when non-private.
func reduction(s Setting, b privacy.Budget, set string, l1 float64) (*mechanism.Laplace, float64, error) {
	if err := check(s, set); err != nil {
		return nil, 0, err
	}
	if s.Rand == nil {
		return nil, 0, inputf("a bandit learner needs a random source")
	}
	if !b.IsPrivate() {
		return nil, 0, nil
	}
	if err := noise.Check(s.Noise); err != nil {
		return nil, 0, inputf("a private learner: %w", err)
	}
	lap, err := mechanism.NewLaplace(b, l1, s.Noise)
	if err != nil {
		return nil, 0, err
	}
	return &lap, lap.Scale(), nil
}

// Params returns eta and gamma.
func (e *EXP2) Params() (eta, gamma float64) { return e.eta, e.gamma }

// Play returns p_t and the arm drawn from it.
func (e *EXP2) Play() ([]float64, int, error) {
	softmax(e.p, e.logw, 1)
	n := float64(len(e.p))
	for i := range e.p {
		e.p[i] = (1-e.gamma)*e.p[i] + e.gamma/n
	}
	u := e.r.Float64()
	e.arm = len(e.p) - 1
	for i, v := range e.p {
		if u < v {
			e.arm = i
			break
		}
		u -= v
	}
	return e.p, e.arm, nil
}

// Observe reads the played arm's loss (noised once when private) and
// updates the weights.
func (e *EXP2) Observe(loss []float64) error {
	if e.arm < 0 {
		return inputf("Observe without Play")
	}
	if len(loss) != len(e.p) {
		return inputf("loss of dimension %d, want %d", len(loss), len(e.p))
	}
	l, err := unit.Clip(loss[e.arm])
	if err != nil {
		return err
	}
	if e.lap != nil {
		if l, err = e.lap.Release(l); err != nil {
			return err
		}
	}
	// logw is -log q up to a constant: the estimate l/p on the played arm.
	e.logw[e.arm] += e.eta * l / e.p[e.arm]
	e.arm = -1
	return nil
}

// FTRLQuad is FTRL with the squared-norm regulariser R(x) = ||x||_2^2 over
// the unit ball (Corollary 3.2 case 2) or the cube [-1, 1]^N (case 3):
// x_t = argmin_x eta <x, L~_{t-1}> + ||x||^2, the projection of
// -eta L~/2 onto the set (radial for the ball, coordinate-wise for the
// cube). Losses lie in the dual unit ball (L2 for the ball, L1 for the
// cube); a larger loss is scaled back onto it. Theorem 3.1's bound with
// D_R = 1 (ball) or N (cube) and (||l||*_{grad^2 R})^2 = ||l||_2^2/2 <= 1/2
// gives eta = sqrt(2 D_R / T) and regret sqrt(2 D_R T) + D_Lap. When
// private, L~ comes from TreeBasedAgg (mechanism.NewTreeAggFor): for an
// eps-DP budget with Laplace noise for the L1 diameter of the loss set,
// 2 sqrt(N) for the L2 ball and 2 for the L1 ball; for a zCDP budget with
// Gaussian noise for the L2 diameter, 2 for both. Corollary 3.2 calibrates with ||Y||_1 (sqrt(N) and 1), the radius
// rather than the diameter, which suffices only for losses that change by
// at most ||Y||_1 in L1; these sets are symmetric, so the diameter is used.
type FTRLQuad struct {
	cube bool
	eta  float64
	L, x []float64
	l    []float64
	tree *mechanism.TreeAgg
	// counter replaces tree when Setting.Counter chooses another one.
	counter mechanism.Counter
}

// NewFTRLQuad returns FTRL over the ball or the cube (s.Set), private for
// an eps-DP (or zCDP) budget.
func NewFTRLQuad(s Setting, b privacy.Budget) (*FTRLQuad, error) {
	if s.Set != "ball" && s.Set != "cube" {
		return nil, inputf("FTRL with the squared norm plays on the ball or the cube, not the %q", s.Set)
	}
	if err := check(s, s.Set); err != nil {
		return nil, err
	}
	f := &FTRLQuad{cube: s.Set == "cube", L: make([]float64, s.N), x: make([]float64, s.N), l: make([]float64, s.N)}
	dr, diam := 1.0, 2*math.Sqrt(float64(s.N))
	if f.cube {
		dr, diam = float64(s.N), 2
	}
	f.eta = math.Sqrt(2 * dr / float64(s.T))
	if b.IsPrivate() {
		if err := noise.Check(s.Noise); err != nil {
			return nil, inputf("a private learner: %w", err)
		}
		var err error
		// Both loss sets lie in the unit L2 ball: L2 diameter 2.
		if f.counter, f.L, err = useCounter(s, b, 2); err != nil {
			return nil, err
		}
		if f.counter != nil {
			return f, nil
		}
		if f.tree, err = mechanism.NewTreeAggFor(b, diam, 2, s.N, s.T, s.Noise); err != nil {
			return nil, err
		}
		f.L = f.tree.Initial()
	}
	return f, nil
}

// Play returns the projection of -eta L~/2 onto the set.
func (f *FTRLQuad) Play() ([]float64, int, error) {
	n := 0.0
	for i, v := range f.L {
		f.x[i] = -f.eta * v / 2
		n += f.x[i] * f.x[i]
	}
	switch {
	case f.cube:
		for i, v := range f.x {
			f.x[i] = math.Min(math.Max(v, -1), 1)
		}
	case n > 1:
		n = math.Sqrt(n)
		for i := range f.x {
			f.x[i] /= n
		}
	}
	return f.x, -1, nil
}

// Observe adds the loss, scaled back onto the dual unit ball if needed.
func (f *FTRLQuad) Observe(loss []float64) error {
	if err := dualBall(f.l, loss, f.cube); err != nil {
		return err
	}
	return addLoss(&f.L, f.counter, f.tree, f.l)
}

// FTPL is Follow the Perturbed Leader (Algorithm 3 of seed 003) on the
// simplex (experts), the ball or the cube: x_t = argmin_x <x, L~_{t-1}>, a
// vertex for the simplex, -L~/||L~||_2 for the ball and -sign(L~) for the
// cube. Non-private, L~ is the true cumulative loss plus one Gaussian
// perturbation N(0, sigma_R^2 I) drawn at the start, with Theorem 3.5's
// regret scale sigma_R = ||Y||_2 sqrt(T/(sqrt(N) ln T)) (||Y||_2 = 1 for
// the loss sets of this package: the unit L2 and L1 balls; sqrt(N) for
// [0,1]^N). Private, L~ comes from TreeBasedAgg with Gaussian nodes of
// standard deviation max(sigma_R, sigma_P), sigma_P the Gaussian
// mechanism's for the budget and a loss's L2 effect on the tree (its L2
// diameter times sqrt(L)): Theorem 3.5's max{., .}, with its privacy term
// (sqrt(N)/eps) log T log(log T/delta) replaced by the exact calibration
// of package privacy, which is (eps, delta)-DP (or zCDP) by the Gaussian
// mechanism applied to the L nodes a loss enters.
type FTPL struct {
	set  string
	L, x []float64
	l    []float64
	tree *mechanism.TreeAgg
}

// NewFTPL returns FTPL (privacy.None()) or private FTPL for a zCDP,
// (eps,delta) or Renyi budget, on s.Set.
func NewFTPL(s Setting, b privacy.Budget) (*FTPL, error) {
	set := s.Set
	if set == "" {
		set = "simplex"
	}
	if err := check(s, set); err != nil {
		return nil, err
	}
	n := float64(s.N)
	normY, diam := 1.0, 2.0
	if set == "simplex" {
		normY, diam = math.Sqrt(n), math.Sqrt(n)
	}
	sigmaR := normY * math.Sqrt(float64(s.T)/(math.Sqrt(n)*math.Max(math.Log(float64(s.T)), 1)))
	f := &FTPL{set: set, L: make([]float64, s.N), x: make([]float64, s.N), l: make([]float64, s.N)}
	if err := noise.Check(s.Noise); err != nil {
		return nil, inputf("FTPL's perturbation: %w", err)
	}
	if b.IsPrivate() {
		var err error
		if f.tree, err = mechanism.NewTreeAggGaussian(b, diam, sigmaR, s.N, s.T, s.Noise); err != nil {
			return nil, err
		}
		f.L = f.tree.Initial()
		return f, nil
	}
	for i := range f.L {
		v, err := s.Noise.AddGaussian(0, sigmaR, 1)
		if err != nil {
			return nil, err
		}
		f.L[i] = v
	}
	return f, nil
}

// Play returns argmin over the set of <x, L~>.
func (f *FTPL) Play() ([]float64, int, error) {
	switch f.set {
	case "simplex":
		best := 0
		for i, v := range f.L {
			f.x[i] = 0
			if v < f.L[best] {
				best = i
			}
		}
		f.x[best] = 1
	case "ball":
		n := 0.0
		for _, v := range f.L {
			n += v * v
		}
		n = math.Sqrt(n)
		for i, v := range f.L {
			f.x[i] = 0
			if n > 0 {
				f.x[i] = -v / n
			}
		}
	case "cube":
		for i, v := range f.L {
			f.x[i] = 0
			if v > 0 {
				f.x[i] = -1
			} else if v < 0 {
				f.x[i] = 1
			}
		}
	}
	return f.x, -1, nil
}

// Observe adds the loss (clipped to [0,1] on the simplex; scaled back onto
// the dual unit ball on the ball and the cube).
func (f *FTPL) Observe(loss []float64) error {
	var err error
	if f.set == "simplex" {
		err = clipLoss(f.l, loss)
	} else {
		err = dualBall(f.l, loss, f.set == "cube")
	}
	if err != nil {
		return err
	}
	return accumulate(&f.L, f.tree, f.l)
}

// dualBall copies loss into dst scaled back onto the unit L2 ball (or L1
// ball when l1), rejecting NaN and Inf.
func dualBall(dst, loss []float64, l1 bool) error {
	if len(loss) != len(dst) {
		return inputf("loss of dimension %d, want %d", len(loss), len(dst))
	}
	n := 0.0
	for i, v := range loss {
		if v-v != 0 { // NaN or infinite
			return inputf("loss %v is not a finite number", v)
		}
		dst[i] = v
		if l1 {
			n += math.Abs(v)
		} else {
			n += v * v
		}
	}
	if !l1 {
		n = math.Sqrt(n)
	}
	if n > 1 {
		for i := range dst {
			dst[i] /= n
		}
	}
	return nil
}
