package olo

import "math"

// Bounder is implemented by the learners whose expected regret has an
// explicit bound in seed 003.
type Bounder interface {
	// Bound returns the bound on the expected regret after t <= T steps,
	// against any oblivious loss sequence of the learner's loss set.
	Bound(t int64) float64
}

// Bound returns the explicit form of Theorem 3.4 (seed 003; Theorem 3.1
// for Laplace noise) for the entropic regulariser, read off its proof
// (equations 2 and 4) at the learner's eta: the stability term of each
// step is at most eta sum_i x_i l_i^2 <= eta for losses in [0,1]^N, so
//
//	Regret_t <= ln N/eta + eta t + D_Lap,
//
// 2 sqrt(T ln N) + D_Lap at t = T. D_Lap = E[max_i Z_i - min_i Z_i] for
// the noise Z of a release is at most 2 E[max_i Z_i] <= 2 inf_s (ln N +
// ln M(s))/s, M the moment generating function of one coordinate's noise
// (Jensen's inequality on exp(s max_i Z_i) <= sum_i exp(s Z_i)): with L
// draws of Lap(lambda), M(s) = (1 - s^2 lambda^2)^-L; with Gaussian nodes
// of standard deviation sigma, M(s) = exp(s^2 L sigma^2/2) and the infimum
// is sigma sqrt(2 L ln N). 0 for Hedge.
func (f *FTRLExperts) Bound(t int64) float64 {
	n := float64(len(f.x))
	d := 0.0
	switch {
	case f.counter != nil: // Gaussian, Var(1) at every t (counterFor)
		d = 2 * math.Sqrt(f.counter.Var(1)) * math.Sqrt(2*math.Log(n))
	case f.tree == nil:
	case f.tree.Gaussian():
		d = 2 * f.tree.SD() * math.Sqrt(2*math.Log(n))
	default:
		d = 2 * maxLaplaceSum(n, f.tree.Levels(), f.tree.Scale())
	}
	return math.Log(n)/f.eta + f.eta*float64(t) + d
}

// maxLaplaceSum bounds E[max_i Z_i] for n independent sums of L Laplace(b)
// draws: inf over u = s b in (0, 1) of (b/u)(ln n - L ln(1 - u^2)), found
// by golden-section search (with h(u) = ln n - L ln(1 - u^2), the function
// is h/u, whose derivative has the sign of u h' - h, increasing from
// -ln n: it has a single minimum).
func maxLaplaceSum(n float64, L int, b float64) float64 {
	g := func(u float64) float64 { return b / u * (math.Log(n) - float64(L)*math.Log1p(-u*u)) }
	lo, hi := 0.0, 1.0
	const phi = 0.6180339887498949
	for range 100 {
		m1, m2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		if g(m1) < g(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	return g((lo + hi) / 2)
}

// Bound returns the explicit form of Theorem 3.4 (seed 003) for the
// squared-norm regulariser, read off its proof: R(x) = ||x||^2 is 2-strongly
// convex, so a step's stability term is at most eta ||l_t||_2^2/2 <= eta/2
// (losses in the unit L2 ball, or the unit L1 ball for the cube), and
//
//	Regret_t <= D_R/eta + eta t/2 + D_Lap,
//
// sqrt(2 D_R T) + D_Lap at t = T, with D_R = 1 (ball) or N (cube). D_Lap is
// E[2 ||Z||_2] <= 2 sd sqrt(N) on the ball and E[2 ||Z||_1] <= 2 N sd on
// the cube (Jensen's inequality), sd the standard deviation of one
// coordinate of a release (TreeAgg.SD: lambda sqrt(2 L) for L draws of
// Lap(lambda), sigma sqrt(L) for Gaussian nodes); 0 when non-private.
func (f *FTRLQuad) Bound(t int64) float64 {
	n := float64(len(f.x))
	dr := 1.0
	if f.cube {
		dr = n
	}
	d := 0.0
	if f.tree != nil || f.counter != nil {
		sd := 0.0
		if f.counter != nil { // Var(1) at every t (counterFor)
			sd = math.Sqrt(f.counter.Var(1))
		} else {
			sd = f.tree.SD()
		}
		d = 2 * sd * math.Sqrt(n)
		if f.cube {
			d = 2 * sd * n
		}
	}
	return dr/f.eta + f.eta*float64(t)/2 + d
}

// Bound returns the explicit bound of the proof of Theorem 4.1 (seed 003)
// at the learner's eta and gamma:
//
//	Regret_t <= ln N/eta + 2 eta t N (1 + 10 lambda^2 ln^2(NT)) + 2 t gamma + 1,
//
// where 10 lambda^2 ln^2(NT) bounds ||Z_t||_inf^2 outside an event of
// probability 1/T, which costs at most t/T <= 1 (the last term, absent when
// non-private; the proof's final line drops the factor 10, kept here). The
// proof needs eta N (1 + 4 lambda ln(NT)) <= gamma for Lemma 4.4; Theorem
// 4.1's gamma = eta N sqrt(1 + 2 lambda^2 ln(NT)) meets it only when
// lambda = 0, so for private EXP2 the curve is the proof's expression at
// the theorem's parameters rather than a proven bound (the tests check it
// empirically).
func (e *EXP2) Bound(t int64) float64 {
	n, tt := float64(len(e.p)), float64(t)
	b := math.Log(n)/e.eta + 2*e.eta*tt*n*(1+10*e.lambda*e.lambda*math.Pow(math.Log(n*float64(e.T)), 2)) + 2*tt*e.gamma
	if e.lambda > 0 {
		b++
	}
	return b
}
