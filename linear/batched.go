package linear

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/design"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/robust"
)

// Model is a client model of seed 004 (Section 3): who holds the rewards
// and what reaches the learner.
type Model int

// The client models.
const (
	// Central: the learner sees the rewards themselves (no privacy).
	Central Model = iota
	// M1: every reward comes from its own client, which reports it
	// clipped to the declared range plus Lap(w/eps) (004 Section 3.1).
	M1
	// M2: one client holds all the rewards of an action in a batch and
	// reports their mean, each reward clipped, plus Lap(w/(n_a eps))
	// (004 Section 3.2, Lemma 3.5).
	M2
)

// Models names the client models, in the order of the constants.
var Models = []string{"none", "m1", "m2"}

// String names the model.
func (m Model) String() string { return Models[m] }

// BatchedConfig configures NewBatched.
type BatchedConfig struct {
	// Model is the client model; M1 and M2 need a budget, Central none.
	Model Model
	// Robust runs the Filter on the batch's points (robust-ae); without
	// it the estimate is plain least squares (batched-ae).
	Robust bool
	// Batches is B >= 2: B - 1 exploration batches, then the best action.
	Batches int
	// Alpha is the corruption probability the learner assumes, in
	// [0, 1/4); it widens the elimination threshold (robust-ae only).
	Alpha float64
	// Delta is the failure probability of the confidence widths.
	Delta float64
	// Nu is M2's truncation: each support action is played at least
	// ceil(nu q^i) times (004 Algorithm 1, line 5), in (0, 1].
	Nu float64
	// Tol is the tolerance of the G-optimal design: g(pi) <= (1+Tol) m.
	Tol float64
	// Eq50 reads 004's corruption term as Eq. (50)'s d sqrt(alpha) per
	// step instead of Theorem 3.4's sqrt(alpha d) (the default): the
	// Filter's error F of gamma is multiplied by sqrt(n mu/2), about sqrt
	// m (robust-ae only; see Batched).
	Eq50 bool
}

// Batched is batched arm elimination under local differential privacy:
// robust arm elimination (seed 004, Algorithm 1) when Robust is set, and
// the same elimination on plain least squares otherwise.
//
// With q = T^(1/B), batch i = 1..B-1 computes a G-optimal design pi over
// the active actions A_{i-1} (design.GOptimal: g(pi) <= (1+Tol) m, m the
// dimension of their span; at Tol = 1 this is 004's Definition 1.6,
// g <= 2d; the support has at most m(m+1)/2 points, the Caratheodory
// bound of Frank-Wolfe with away steps, in place of the C d log log d of
// Definition 1.6, whose constant C the paper leaves open), plays each
// support action n_a = ceil(q^i pi(a)) times (M1, none) or ceil(q^i
// max(pi(a), nu)) times (M2), and estimates theta from what the clients
// report (Report):
//
//   - M1 and none: one observation y_j per reward, n points in all, with
//     M = sum_j a_j a_j^T over the plays;
//   - M2: one observation per support action (its client's mean), k
//     points, with M = sum_v v v^T over the support (Lemmas 3.6 and 3.7).
//
// The robust estimate is Eq. (13): w = Filter({M^-1/2 a_j y_j}, lambda),
// theta = n M^-1/2 w; the plain one theta = M^-1 sum_j a_j y_j. The
// actions with <a, theta> >= max_b <b, theta> - 2 gamma_i stay (line 10);
// after batch B-1 the policy plays the active action of largest
// <a, theta> for the rest of the horizon (line 12).
//
// lambda. The Filter's lambda bounds the top eigenvalue of the clean
// points' covariance, and Proposition 2.1 needs it known in advance.
// Line 7 prints it as mu_A * mean(r^2) over the observed rewards; read
// that way it is at least the trace of the observed points' second
// moment, so the Filter never removes a point and a corrupted value
// moves the estimate without bound (TestBatchedLambdaFromObservations
// shows it). Here lambda comes from the declared range, not from the
// observations:
//
//	lambda = Y^2 / (n (1 - eps_n)),
//
// where Y^2 bounds E y^2 of one clean observation, from the declared
// range [lo, hi] and the randomiser: R^2 (none), R^2 + 2 (w/eps)^2 (M1),
// R^2 + 2 (w/(n_min eps))^2 (M2), R = max(|lo|, |hi|), w = hi - lo. The
// points are p_j = M^-1/2 a_j y_j with M = sum_j a_j a_j^T over the n
// points, so sum_j M^-1/2 a_j a_j^T M^-1/2 = I and the clean points'
// second moment is at most (1/|G|) sum_{j in G} y_j^2 M^-1/2 a_j a_j^T
// M^-1/2 <= (Y^2/|G|) I in expectation, with |G| >= n (1 - eps_n) clean
// points (eps_n below, at most 1/2 in the code); the Filter's test at
// 4 lambda leaves the slack for the empirical mean.
//
// gamma_i. 004's printed thresholds are damaged in extraction; they are
// reconstructed from the proofs (Proposition 2.1, Eq. (44), Lemmas
// 3.1-3.8, Theorem A.2) with explicit constants, per batch, and with
// L = ln(2 K B / delta) (a union bound over the K actions and the B
// batches) as
//
//	gamma = N + [alpha > 0] (F + D),
//
// N, the clean estimate's noise: the least-squares error in direction a
// is sum_j c_j e_j with c_j = <a, M^-1 a_j>, ||c||_2 = ||a||_M^-1 and
// ||c||_inf <= sqrt(mu mu_A), mu = max over the active actions of
// a^T M^-1 a. The clean reward noise lies in an interval of width w, so
// is (w/2)-sub-Gaussian (Hoeffding's lemma; w/(2 sqrt(n_min)) for M2's
// means), and Lap(b) satisfies E e^(s xi) <= e^(2 s^2 b^2) for |s| b <=
// 1/2, whence (Lemma 3.1's Bernstein step, with its constants)
//
//	N = sqrt(mu) sigma sqrt(2L) + max(b sqrt(8 mu L), 4 b sqrt(mu mu_A) L),
//
// sigma = w/2 (M1, none) or w/(2 sqrt(n_min)) (M2), b = w/eps (M1),
// w/(n_min eps) (M2), 0 (none).
//
// F, the Filter's error (Theorem A.2 with its constant made explicit):
// with eps_n = alpha + sqrt(2 alpha L/n) + 2L/(3n) (Bernstein's bound on
// the fraction of corrupted points, Lemma A.3) and e = eps_n/(1-eps_n),
// a subset T of a set S with |T| >= (1-e)|S| has a mean within
// sqrt(e)/(1-e) sqrt(||Cov S||) of S's; applied to the kept set (Cov <=
// 4 lambda) and to the clean set (Cov <= lambda), both containing their
// intersection, ||w - w_G|| <= 3 sqrt(lambda e)/(1-e), and in direction
// a, times n M^-1/2:
//
//	F = 3 n sqrt(mu lambda e) / (1 - e).
//
// D, the gap between the clean points' estimate n M^-1/2 w_G and the
// clean least squares (Eqs. (37)-(41), with ||M^-1/2 sum_{j in S} a_j
// y_j|| <= ||y_S|| for any subset S, Eq. (39)):
//
//	D = sqrt(mu n) Y (e + sqrt(eps_n)).
//
// If eps_n >= 1/2 the bound is void and nothing is eliminated. Read
// this way, gamma does not vanish when alpha > 0: with lambda as above,
// F tends to 3 Y sqrt(n mu alpha), and n mu is about the design's g <=
// (1+Tol) m for m coreset points, so F stays near 3 Y sqrt((1+Tol) m
// alpha) however large the batch: summed over a batch's pulls it is the
// T sqrt(alpha d) term of Theorems 3.4 and 3.9 (linear in T). 004 is
// not consistent there: the proof's Eq. (50) bounds the same error by d
// sqrt(alpha) (with mu <= 2d/n, Eq. (49)), sqrt(d) times more. Eq50
// selects that reading, F times sqrt(n mu/2); Theorem 3.4's is the
// default, the smaller. On the preset's instance
// (d = 5, rewards in [-1, 1]) it exceeds the largest gap for every alpha
// >= 0.05 and eps <= 5, so robust-ae then eliminates nothing and the
// robustness is the Filter's: the last batch's estimate picks the action
// played for the rest of the horizon.
//
// Privacy: every reward reaches the learner only through its client's
// Laplace randomiser (mechanism.NewLocalReward, NewLocalBatchMean), so
// the policy is eps-LDP (a rho-zCDP budget is met with eps = sqrt(2
// rho)); what the learner does with the reports is post-processing, and
// corruption (which replaces reports) does not touch the guarantee. The
// unit is one reward (004's Definition 1.1: neighbouring reward
// sequences differ in one reward), and each reward enters one report. An
// M1 client holds one reward. An M2 client holds every reward of its
// action: its report of n rewards is n eps-DP in all of them (the mean
// moves by up to w), and over the run, at most ceil(q^i) rewards in each
// batch i = 1..B-1, it is sum_i ceil(q^i) eps-LDP, about T^((B-1)/B) eps:
// M2 protects rewards, not clients. catalog.Spec.LocalBudget states that
// guarantee (privacy.Budget.Client) and, with unit=client, derives the
// randomisers' eps from a per-client one.
type Batched struct {
	cfg     BatchedConfig
	bounds  mechanism.Bounds
	budget  privacy.Budget
	setting bandit.Setting
	q       float64
	logK    float64 // L = ln(2 K B / delta)

	active []int
	batch  int // batches planned so far
	des    *design.Design
	arms   []int   // the batch's support actions
	counts []int64 // their pulls
	coords [][]float64
	m1     mechanism.Local
	m2     []mechanism.Local
	t      int64
	best   int
	final  bool
	last   Estimate
	rng    *rand.Rand
}

// Estimate is what a batch's estimation produced (for tests and
// diagnostics): the elimination half-width gamma, the Filter's lambda
// and removals (robust only), and theta in the span coordinates.
type Estimate struct {
	Gamma, Lambda float64
	Removed       int
	Theta         []float64
}

// NewBatched returns the policy. A private model (M1, M2) needs a
// budget; Central rejects one, since it would spend nothing.
func NewBatched(s bandit.Setting, b privacy.Budget, c BatchedConfig) (*Batched, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	switch {
	case c.Model < Central || c.Model > M2:
		return nil, inputf("unknown client model %d", c.Model)
	case c.Model == Central && b.IsPrivate():
		return nil, inputf("model none sees raw rewards and spends no budget; give it none, or choose m1 or m2 for %s", b)
	case c.Model != Central && !b.IsPrivate():
		return nil, inputf("client model %s needs a privacy budget", c.Model)
	case c.Model != Central && noise.Check(s.Noise) != nil:
		return nil, inputf("a private policy: %w", noise.Check(s.Noise))
	case c.Batches < 2:
		return nil, inputf("batched elimination needs at least 2 batches, got %d", c.Batches)
	case !(c.Alpha >= 0 && c.Alpha < 0.25):
		return nil, inputf("the assumed corruption probability must lie in [0, 1/4), got %v", c.Alpha)
	case !(c.Delta > 0 && c.Delta < 1):
		return nil, inputf("delta must lie in (0, 1), got %v", c.Delta)
	case !(c.Nu > 0 && c.Nu <= 1):
		return nil, inputf("nu must lie in (0, 1], got %v", c.Nu)
	case !(c.Tol > 0) || math.IsInf(c.Tol, 0):
		return nil, inputf("the design tolerance must be positive, got %v", c.Tol)
	case s.Horizon < 2:
		return nil, inputf("batched elimination needs a horizon of at least 2, got %d", s.Horizon)
	}
	p := &Batched{cfg: c, bounds: s.Bounds, budget: b, setting: s, rng: s.Rand,
		q:    math.Pow(float64(s.Horizon), 1/float64(c.Batches)),
		logK: math.Log(2 * float64(s.Arms) * float64(c.Batches) / c.Delta)}
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(0, 0))
	}
	if c.Model == M1 {
		m, err := mechanism.NewLocalReward(b, s.Bounds, s.Noise)
		if err != nil {
			return nil, err
		}
		p.m1 = m
	}
	for a := range s.Actions {
		p.active = append(p.active, a)
	}
	return p, nil
}

// Next returns the next batch: Counts[j] pulls of action Arms[j]. It
// returns ok = false once exploration is over (after B - 1 batches, or
// when one action is left, or when the next batch does not fit in the
// horizon); then the policy plays Best for the rest of the horizon.
func (p *Batched) Next() (arms []int, counts []int64, ok bool, err error) {
	if p.final {
		return nil, nil, false, nil
	}
	if len(p.active) == 1 || p.batch == p.cfg.Batches-1 || p.t >= p.setting.Horizon {
		p.final = true
		if len(p.active) == 1 || p.last.Theta == nil {
			p.best = p.active[0]
		}
		return nil, nil, false, nil
	}
	acts := make([][]float64, len(p.active))
	for i, a := range p.active {
		acts[i] = p.setting.Actions[a]
	}
	des, err := design.GOptimal(acts, p.cfg.Tol)
	if err != nil {
		return nil, nil, false, err
	}
	p.des = des
	m := math.Pow(p.q, float64(p.batch+1))
	left := p.setting.Horizon - p.t
	p.arms, p.counts, p.coords, p.m2 = p.arms[:0], p.counts[:0], p.coords[:0], p.m2[:0]
	for _, i := range des.Support {
		w := des.Weights[i]
		if p.cfg.Model == M2 {
			w = max(w, p.cfg.Nu)
		}
		n := int64(math.Ceil(m * w))
		if n > left {
			// The batch does not fit in the horizon: exploration ends.
			p.final = true
			if p.last.Theta == nil {
				p.best = p.active[0]
			}
			return nil, nil, false, nil
		}
		left -= n
		p.arms = append(p.arms, p.active[i])
		p.counts = append(p.counts, n)
		p.coords = append(p.coords, des.Coords[i])
		if p.cfg.Model == M2 {
			l, err := mechanism.NewLocalBatchMean(p.budget, p.bounds, n, p.setting.Noise)
			if err != nil {
				return nil, nil, false, err
			}
			p.m2 = append(p.m2, l)
		}
	}
	p.batch++
	return slices.Clone(p.arms), slices.Clone(p.counts), true, nil
}

// Report is the clients' side of the batch's j-th support action: given
// its rewards (Counts[j] of them), it returns what reaches the learner:
// the rewards themselves (model none), one randomised report per reward
// (M1), or one randomised mean (M2). Rewards are clipped to the declared
// range by the randomisers; NaN and infinities are errors.
func (p *Batched) Report(j int, rewards []float64) ([]float64, error) {
	if j < 0 || j >= len(p.arms) || int64(len(rewards)) != p.counts[j] {
		return nil, inputf("report %d of the batch needs %d rewards", j, p.counts[j])
	}
	switch p.cfg.Model {
	case M1:
		out := make([]float64, len(rewards))
		for i, r := range rewards {
			y, err := p.m1.Report(r)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case M2:
		y, err := p.m2[j].Report(rewards...)
		return []float64{y}, err
	}
	for _, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, inputf("reward %v is not finite", r)
		}
	}
	return slices.Clone(rewards), nil
}

// Observe takes the observations of the batch (obs[j] for its j-th
// support action, as Report returns them, possibly corrupted on the way),
// estimates theta and eliminates.
func (p *Batched) Observe(obs [][]float64) error {
	if p.final || len(obs) != len(p.arms) {
		return inputf("observations for %d actions, the batch has %d", len(obs), len(p.arms))
	}
	per := int64(1)
	for j, o := range obs {
		if p.cfg.Model != M2 {
			per = p.counts[j]
		}
		if int64(len(o)) != per {
			return inputf("action %d: %d observations, want %d", p.arms[j], len(o), per)
		}
		for _, y := range o {
			if math.IsNaN(y) || math.IsInf(y, 0) {
				return inputf("observation %v is not finite", y)
			}
		}
		p.t += p.counts[j]
	}
	est, err := p.estimate(obs)
	if err != nil {
		return err
	}
	p.last = est
	theta := mat.NewVecDense(p.des.Dim, est.Theta)
	vals := make([]float64, len(p.active))
	top := math.Inf(-1)
	for i := range p.active {
		vals[i] = mat.Dot(theta, mat.NewVecDense(p.des.Dim, slices.Clone(p.des.Coords[i])))
		if vals[i] > top {
			top, p.best = vals[i], p.active[i]
		}
	}
	kept := p.active[:0]
	for i, a := range p.active {
		if vals[i] >= top-2*est.Gamma {
			kept = append(kept, a)
		}
	}
	p.active = kept
	return nil
}

// estimate computes theta and gamma from the batch's observations.
func (p *Batched) estimate(obs [][]float64) (Estimate, error) {
	dim := p.des.Dim
	mm := mat.NewSymDense(dim, nil)
	n := 0
	nmin := int64(math.MaxInt64)
	for j, o := range obs {
		x := mat.NewVecDense(dim, slices.Clone(p.coords[j]))
		mm.SymRankOne(mm, float64(len(o)), x)
		n += len(o)
		nmin = min(nmin, p.counts[j])
	}
	inv, err := inverse(mm)
	if err != nil {
		return Estimate{}, err
	}
	quad := func(c []float64) float64 {
		x := mat.NewVecDense(dim, slices.Clone(c))
		var y mat.VecDense
		y.MulVec(inv, x)
		return mat.Dot(x, &y)
	}
	muA := 0.0
	for _, c := range p.coords {
		muA = max(muA, quad(c))
	}
	mu := 0.0
	for _, c := range p.des.Coords {
		mu = max(mu, quad(c))
	}

	w := p.bounds.Width()
	r := max(math.Abs(p.bounds.Lo), math.Abs(p.bounds.Hi))
	sigma, b := w/2, 0.0
	switch p.cfg.Model {
	case M1:
		b = p.m1.Scale()
	case M2:
		sigma /= math.Sqrt(float64(nmin))
		for _, l := range p.m2 {
			b = max(b, l.Scale())
		}
	}
	y2 := r*r + 2*b*b
	L := p.logK
	est := Estimate{Gamma: math.Sqrt(mu)*sigma*math.Sqrt(2*L) + max(b*math.Sqrt(8*mu*L), 4*b*math.Sqrt(mu*muA)*L)}

	theta := mat.NewVecDense(dim, nil)
	if !p.cfg.Robust {
		b := mat.NewVecDense(dim, nil)
		for j, o := range obs {
			x := mat.NewVecDense(dim, slices.Clone(p.coords[j]))
			for _, y := range o {
				b.AddScaledVec(b, y, x)
			}
		}
		theta.MulVec(inv, b)
		est.Theta = theta.RawVector().Data
		return est, nil
	}

	half, err := invSqrt(mm)
	if err != nil {
		return Estimate{}, err
	}
	points := make([][]float64, 0, n)
	for j, o := range obs {
		var z mat.VecDense
		z.MulVec(half, mat.NewVecDense(dim, slices.Clone(p.coords[j])))
		for _, y := range o {
			pt := make([]float64, dim)
			for i := range pt {
				pt[i] = y * z.AtVec(i)
			}
			points = append(points, pt)
		}
	}
	fn := float64(n)
	epsN := 0.0
	if a := p.cfg.Alpha; a > 0 {
		epsN = a + math.Sqrt(2*a*L/fn) + 2*L/(3*fn)
	}
	est.Lambda = y2 / (fn * max(1-epsN, 0.5))
	mean, removed, err := robust.Filter(points, est.Lambda, p.rng)
	if err != nil {
		return Estimate{}, err
	}
	est.Removed = removed
	theta.MulVec(half, mat.NewVecDense(dim, mean))
	theta.ScaleVec(float64(n), theta)
	est.Theta = theta.RawVector().Data

	if p.cfg.Alpha > 0 {
		if epsN >= 0.5 {
			est.Gamma = math.Inf(1)
			return est, nil
		}
		e := epsN / (1 - epsN)
		y := math.Sqrt(y2)
		f := 3 * fn * math.Sqrt(mu*est.Lambda*e) / (1 - e)
		if p.cfg.Eq50 {
			f *= math.Sqrt(fn * mu / 2)
		}
		est.Gamma += f + math.Sqrt(mu*fn)*y*(e+math.Sqrt(epsN))
	}
	return est, nil
}

// Best returns the action played once exploration is over: the active
// action of largest estimated reward in the last batch.
func (p *Batched) Best() int { return p.best }

// Last returns the last batch's estimate.
func (p *Batched) Last() Estimate { return p.last }

// Active returns the actions not yet eliminated.
func (p *Batched) Active() []int { return slices.Clone(p.active) }

// Episodes returns the number of batches planned.
func (p *Batched) Episodes() int64 { return int64(p.batch) }
