package linear

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Variant selects where AdaC-GOPE adds its noise.
type Variant int

const (
	// NoiseTheta is AdaC-GOPE (Algorithm 2 of seed 001): noise on
	// phi = V^-1/2 sum_t a_t r_t.
	NoiseTheta Variant = iota
	// NoiseSums is AdaR-GOPE-Var (seed 001, Appendix H and E-C): noise on
	// each support action's reward sum.
	NoiseSums
)

// GOPE is G-optimal design based phased elimination (Lattimore and
// Szepesvari, Algorithm 12) and, with a privacy budget, AdaC-GOPE
// (Algorithm 2 of seed 001) or AdaR-GOPE-Var (its Appendix H).
//
// Phase l (beta_l = 2^-l) computes a G-optimal design pi_l of the active
// actions A_l (design.GOptimal, in the span of A_l, of dimension m), plays
// each support action T_l(a) = ceil(c_l pi_l(a)) times with Eq. (4):
//
//	c_l = 8m/beta_l^2 ln(4/delta_Kl) + (2m/beta_l) w sqrt(b f(m, delta_Kl)),
//	delta_Kl = delta/(K l (l+1)),  f(d, x) = d + 2 sqrt(d ln(2/x)) + 2 ln(2/x),
//
// the second term only when private, where b is the Gaussian factor of the
// budget (1/(2 rho) for rho-zCDP; privacy.GaussianFactor) and w the width
// of the reward range (2 for [-1, 1], which gives the paper's
// (2d/beta) sqrt((2/rho) f)). It then estimates theta^ = V_l^-1 sum_t a_t r_t
// with V_l = sum_a T_l(a) a a^T and keeps the actions with
// max_b <theta~, b - a> <= 2 beta_l, where theta~ is
//
//   - GOPE: theta^;
//   - AdaC-GOPE: V_l^-1/2 (phi + N), phi = V_l^-1/2 sum_t a_t r_t, N from the
//     Gaussian mechanism for phi's L2 sensitivity w g_l, g_l = max over
//     A_l of ||b||_{V_l^-1}, computed from the V_l actually played
//     (Algorithm 2 writes the variance 2d/(rho c_l), which equals
//     2 g_l^2/rho only for an exact design; Appendix D proves privacy with
//     g_l);
//   - AdaR-GOPE-Var: V_l^-1 sum_a a (S_a + N_a), each action's reward sum
//     S_a released by the Gaussian mechanism for sensitivity w.
//
// The paper states Eq. (4) with d; m = d when the active actions span
// R^d. Each reward enters one release, so AdaC-GOPE and AdaR-GOPE-Var are
// rho-Interactive zCDP (Theorem 3); (eps, delta) and Renyi budgets change
// the Gaussian factor as in Theorem 18.
type GOPE struct {
	*phased
	private bool
	// cal is the Gaussian mechanism calibrated to the budget, once: a
	// phase's release is cal at its sensitivity.
	cal     mechanism.GaussianCalibration
	delta   float64
	tol     float64
	variant Variant
	factor  float64 // Gaussian factor b; 0 when non-private
	k       int

	// Sigma and G are the noise standard deviation and g_l of the last
	// completed phase (0 when non-private): the values an audit of the
	// calibration checks.
	Sigma, G float64
}

// NewGOPE returns GOPE (privacy.None()), AdaC-GOPE (variant NoiseTheta) or
// AdaR-GOPE-Var (NoiseSums) with failure probability delta in (0,1) and
// design tolerance tol > 0 (g(pi) <= (1 + tol) m).
//
// Private policies rely on Feedback's privacy obligation: report rewards
// one at a time or with Samples, or sums of rewards already clipped to
// the declared range (see bandit.Feedback).
func NewGOPE(s bandit.Setting, b privacy.Budget, delta, tol float64, variant Variant) (*GOPE, error) {
	ph, err := newPhased(s, b.IsPrivate())
	if err != nil {
		return nil, err
	}
	if !(delta > 0 && delta < 1) {
		return nil, inputf("delta must lie in (0,1), got %v", delta)
	}
	if !(tol > 0) || math.IsInf(tol, 0) {
		return nil, inputf("tol must be positive and finite, got %v", tol)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	g := &GOPE{phased: ph, private: b.IsPrivate(), delta: delta, tol: tol, variant: variant, k: s.Arms}
	if b.IsPrivate() {
		if err := noise.Check(s.Noise); err != nil {
			return nil, inputf("a private policy: %w", err)
		}
		if g.cal, err = mechanism.CalibrateGaussian(b, s.Noise); err != nil {
			return nil, err
		}
		if _, err := g.cal.At(1); err != nil {
			return nil, err
		}
		if g.factor, err = privacy.GaussianFactor(b); err != nil {
			return nil, err
		}
	}
	ph.plan, ph.end = g.plan, g.end
	return g, ph.start()
}

// C returns c_l of Eq. (4) for phase l in dimension m.
func (g *GOPE) C(l, m int) float64 {
	beta := math.Ldexp(1, -l)
	dkl := g.delta / (float64(g.k) * float64(l) * float64(l+1))
	md := float64(m)
	c := 8 * md / (beta * beta) * math.Log(4/dkl)
	if g.factor > 0 {
		f := md + 2*math.Sqrt(md*math.Log(2/dkl)) + 2*math.Log(2/dkl)
		c += 2 * md / beta * g.bounds.Width() * math.Sqrt(g.factor*f)
	}
	return c
}

func (g *GOPE) plan() error {
	if err := g.designActive(g.tol); err != nil {
		return err
	}
	g.schedule(g.C(g.phase, g.des.Dim))
	return nil
}

func (g *GOPE) end() error {
	v, b := g.gram(func(a int) float64 { return g.sums.F[a] })
	inv, err := inverse(v)
	if err != nil {
		return err
	}
	theta := apply(inv, b)
	w := g.bounds.Width()
	switch {
	case !g.private:
	case g.variant == NoiseTheta:
		// g_l = max over A_l of ||x||_{V^-1}.
		gl := 0.0
		for i := range g.active {
			x := mat.NewVecDense(g.des.Dim, g.des.Coords[i])
			gl = math.Max(gl, mat.Inner(x, inv, x))
		}
		gl = math.Sqrt(gl)
		half, err := invSqrt(v)
		if err != nil {
			return err
		}
		noisy, sigma, err := g.releasePhi(half, b, w, gl)
		if err != nil {
			return err
		}
		theta.MulVec(half, mat.NewVecDense(len(noisy), noisy))
		g.Sigma, g.G = sigma, gl
	case g.variant == NoiseSums:
		mech, err := g.cal.At(w)
		if err != nil {
			return err
		}
		_, nb, err := g.gramReleased(mech.ReleaseSums)
		if err != nil {
			return err
		}
		theta = apply(inv, nb)
		g.Sigma = mech.Sigma()
	}
	g.eliminate(theta, 2*math.Ldexp(1, -g.phase))
	return nil
}

// releasePhi releases phi = V^-1/2 sum_t a_t r_t = V^-1/2 b by the
// Gaussian mechanism for L2 sensitivity w g_l, and returns it with the
// noise's standard deviation. With exact sums (a snapping noise source)
// phi is computed exactly as K S, the per-action reward sums S combined by
// the public matrix K = V^-1/2 C^T (C the support's coordinates), and the
// sensitivity is w times the largest column norm of K, widened by a
// relative 2^-40 (in exact arithmetic it is w g_l; the float K carries
// rounding).
func (g *GOPE) releasePhi(half *mat.Dense, b *mat.VecDense, w, gl float64) ([]float64, float64, error) {
	if !g.sums.Exact() {
		var phi mat.VecDense
		phi.MulVec(half, b)
		mech, err := g.cal.At(w * gl)
		if err != nil {
			return nil, 0, err
		}
		noisy, err := mech.ReleaseVec(phi.RawVector().Data)
		return noisy, mech.Sigma(), err
	}
	m := g.des.Dim
	k := make([][]float64, m)
	for j := range k {
		k[j] = make([]float64, len(g.sums.F))
	}
	colMax := 0.0
	for i, a := range g.active {
		if g.counts[a] == 0 {
			continue
		}
		c := mat.NewVecDense(m, append([]float64(nil), g.des.Coords[i]...))
		var col mat.VecDense
		col.MulVec(half, c)
		for j := range m {
			k[j][a] = col.AtVec(j)
		}
		colMax = math.Max(colMax, mat.Norm(&col, 2))
	}
	sens := w * math.Max(gl, colMax) * (1 + 0x1p-40)
	mech, err := g.cal.At(sens)
	if err != nil {
		return nil, 0, err
	}
	noisy, err := mech.ReleaseSums(g.sums.Combine(k), 1)
	return noisy, mech.Sigma(), err
}
