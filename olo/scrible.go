package olo

import (
	"math"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// SCRiBLE is the bandit linear optimisation algorithm of Abernethy, Hazan
// and Rakhlin (2008, 2012) on the unit ball of R^N with the 1-self-
// concordant barrier R(x) = -ln(1 - ||x||^2), and its private version: the
// reduction of Algorithm 4 of seed 003 around it (Theorem 4.5).
//
// At step t it holds x_t = argmin_x eta <L~_{t-1}, x> + R(x), which on the
// ball is x = -s L~/||L~|| with s = (sqrt(1 + (eta ||L~||)^2) - 1)/(eta
// ||L~||) (the gradient eta L~ + 2x/(1 - ||x||^2) vanishes). The Hessian
// of R at x, 2I/(1-r^2) + 4 x x^T/(1-r^2)^2 (r = ||x||), has the
// eigenvalue 2(1+r^2)/(1-r^2)^2 along x and 2/(1-r^2) on its orthogonal
// complement. SCRiBLE draws an eigenpair (lambda_i, e_i) uniformly and a
// sign eps_t, plays y_t = x_t + eps_t lambda_i^-1/2 e_i (on the Dikin
// ellipsoid, inside the ball), observes the scalar loss <l_t, y_t> and
// estimates l~_t = N <l_t, y_t> eps_t lambda_i^1/2 e_i, unbiased for l_t.
//
// Private, it is fed <l_t, y_t> + <Z_t, y_t>, Z_t ~ Lap^N(lambda) from
// the Laplace mechanism for the L1 diameter of the loss set, 2 sqrt(N) for
// the unit L2 ball (Lemma 4.2's fictitious loss puts <l_t, y_t>/y_i on the
// largest coordinate i of y_t, so neighbouring losses move it by at most
// ||l - l'||_1 <= 2 sqrt(N); Theorem 4.5 writes ||Y||_1, the radius, as
// Corollary 3.2 does). eta = sqrt(nu ln T / (2 N^2 T (M^2 + lambda^2 N
// ||X||_2^2))) with nu = 1, M = 1 and ||X||_2 = 1 (Theorem 4.5; lambda =
// 0 when non-private).
//
// Play returns x_t, the expectation of the played point y_t over the
// learner's own randomisation, so the simulator's regret is the expected
// regret given the past; Observe reads only <l_t, y_t>.
type SCRiBLE struct {
	eta  float64
	L    []float64 // L~_{t-1}
	x, y []float64
	l    []float64 // the loss, scaled back onto the unit ball
	v    []float64 // Householder vector mapping e_1 to x/||x||
	r    *rand.Rand
	lap  *mechanism.Laplace
	// exact: the noise source takes exact statistics, so l + Z itself is
	// released (see Observe).
	exact bool
	z     []float64
	ready bool // y holds the point played at this step
	// the eigenpair and sign of the step
	dir     []float64
	sqrtLam float64
	sign    float64
}

// NewSCRiBLE returns SCRiBLE (privacy.None()) or its private reduction for
// an eps-DP (or zCDP) budget, on the unit ball (s.Set = "ball").
func NewSCRiBLE(s Setting, b privacy.Budget) (*SCRiBLE, error) {
	n := s.N
	lap, lambda, err := reduction(s, b, "ball", 2*math.Sqrt(float64(n)))
	if err != nil {
		return nil, err
	}
	f := &SCRiBLE{L: make([]float64, n), x: make([]float64, n), y: make([]float64, n), l: make([]float64, n),
		v: make([]float64, n), dir: make([]float64, n), z: make([]float64, n), r: s.Rand, lap: lap, exact: mechanism.ExactFor(s.Noise)}
	nf, T := float64(n), float64(s.T)
	f.eta = math.Sqrt(math.Log(math.Max(T, 2)) / (2 * nf * nf * T * (1 + lambda*lambda*nf)))
	return f, nil
}

// Eta returns the learning rate.
func (f *SCRiBLE) Eta() float64 { return f.eta }

// Play draws the step's point y_t and returns x_t = E[y_t].
func (f *SCRiBLE) Play() ([]float64, int, error) {
	n := len(f.x)
	r2 := 0.0
	for _, v := range f.x {
		r2 += v * v
	}
	i := f.r.IntN(n)
	f.sign = 1
	if f.r.Uint64()&1 == 0 {
		f.sign = -1
	}
	f.sqrtLam = f.eigen(i, r2)
	for k := range f.y {
		f.y[k] = f.x[k] + f.sign*f.dir[k]/f.sqrtLam
	}
	f.ready = true
	return f.x, -1, nil
}

// eigen writes into dir the i-th eigenvector of the Hessian at x (r2 =
// ||x||^2) and returns the square root of its eigenvalue. i = 0 is the
// radial direction u = x/||x||, i >= 1 the other columns of the Householder
// reflection H = I - 2 v v^T/||v||^2, v = u - e_1, which maps e_1 to u:
// an orthonormal basis of the complement of u (H = I when x = 0 or u =
// e_1).
func (f *SCRiBLE) eigen(i int, r2 float64) float64 {
	lam := 2 / (1 - r2)
	if i == 0 {
		lam = 2 * (1 + r2) / ((1 - r2) * (1 - r2))
	}
	clear(f.dir)
	f.dir[i] = 1
	norm := math.Sqrt(r2)
	if norm == 0 {
		return math.Sqrt(lam)
	}
	vv := 0.0
	for k, x := range f.x {
		f.v[k] = x / norm
		if k == 0 {
			f.v[k]--
		}
		vv += f.v[k] * f.v[k]
	}
	if vv < 1e-30 {
		return math.Sqrt(lam)
	}
	c := 2 * f.v[i] / vv
	for k := range f.dir {
		f.dir[k] -= c * f.v[k]
	}
	return math.Sqrt(lam)
}

// Observe reads the scalar loss <l_t, y_t> (plus <Z_t, y_t> when
// private), forms the estimate and moves x to the new FTRL minimiser.
func (f *SCRiBLE) Observe(loss []float64) error {
	if !f.ready {
		return inputf("Observe without Play")
	}
	// A loss outside the unit ball is scaled back onto it, as for FTRL.
	if err := dualBall(f.l, loss, false); err != nil {
		return err
	}
	obs := 0.0
	if f.lap != nil && f.exact {
		// On a snapping noise source the vector l + Z itself is released
		// (exactly, on the grid), and <l + Z, y> computed from it: a
		// post-processing of the release, with no floating-point
		// computation on the loss before it.
		copy(f.z, f.l)
		if err := f.lap.AddTo(f.z); err != nil {
			return err
		}
		for k, v := range f.z {
			obs += v * f.y[k]
		}
	} else {
		for k, v := range f.l {
			obs += v * f.y[k]
		}
	}
	if f.lap != nil && !f.exact {
		clear(f.z)
		if err := f.lap.AddTo(f.z); err != nil {
			return err
		}
		for k, v := range f.z {
			obs += v * f.y[k]
		}
	}
	f.ready = false
	n := float64(len(f.x))
	g := n * obs * f.sign * f.sqrtLam
	norm := 0.0
	for k := range f.L {
		f.L[k] += g * f.dir[k]
		norm += f.L[k] * f.L[k]
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		clear(f.x)
		return nil
	}
	a := f.eta * norm
	s := a / (math.Sqrt(1+a*a) + 1) // (sqrt(1 + a^2) - 1)/a, without cancellation
	for k, v := range f.L {
		f.x[k] = -s * v / norm
	}
	return nil
}
