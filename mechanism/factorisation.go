package mechanism

import (
	"math"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// MaxFactorisationT is the longest horizon NewFactorisation accepts. Step
// t costs two convolutions of length t (2 t n multiply-adds) and the
// state is 2 T n values: at T = 2^16 a stream of scalars takes about
// 4.3e9 multiply-adds in all, and at T = 2^20 it would take 1.1e12 (the
// per-step cost that rules the dense factorisation out for long streams;
// see docs/algorithms.md).
const MaxFactorisationT = 1 << 16

// factorisation is the square-root factorisation mechanism
// (NewFactorisation).
type factorisation struct {
	n    int
	T, t int64
	g    Gaussian
	b    privacy.Budget
	f, c []float64 // f(k), and c(t) = sum_{k<t} f(k)^2
	x, w []float64 // inputs, and the noisy L x, by step (t n values)
	lx   []float64
	out  []float64
}

// NewFactorisation returns the factorisation mechanism for continual
// counting with the square-root factorisation A = L L of the T x T
// lower-triangular all-ones matrix (Fichtenberger, Henzinger and
// Upadhyay, ICML 2023, "Constant matters"; its mean squared error:
// Henzinger, Upadhyay and Upadhyay, SODA 2023): L is lower-triangular
// Toeplitz with L[i][j] = f(i-j), f(0) = 1, f(k) = f(k-1) (2k-1)/(2k)
// (f(k) = C(2k,k)/4^k, the coefficients of (1-z)^(-1/2)). It releases
// w = L x + z, z ~ N(0, sigma^2 I) coordinate by coordinate (w_t needs
// x_1..x_t only) and S_hat_t = (L w)_t = S_t + (L z)_t.
//
// Privacy: one input x_s changed by at most l2 moves L x by at most
// l2 ||L||_{1->2}, the largest column norm, sqrt(sum_{k<T} f(k)^2),
// computed here exactly by summation (no closed-form bound is assumed: the
// one the spec remembered is false), so sigma is the Gaussian mechanism's
// for that sensitivity, sigma^2 = l2^2 sum_{k<T} f(k)^2/(2 rho) under
// rho-zCDP. Var(t) = sigma^2 sum_{k<t} f(k)^2. Under adaptively chosen
// inputs the guarantee of lower-triangular factorisations is that of
// Denisov et al. (NeurIPS 2022), which the spec recalls and this code
// has not checked in their text.
//
// Work O(t n) at step t, memory O(T n): T <= MaxFactorisationT.
func NewFactorisation(b privacy.Budget, l2 float64, n int, T int64, nz noise.Noise) (Counter, error) {
	if err := counterArgs(n, T); err != nil {
		return nil, err
	}
	if T > MaxFactorisationT {
		return nil, inputf("the factorisation mechanism costs O(t) per step; horizon %d exceeds %d", T, MaxFactorisationT)
	}
	c := &factorisation{n: n, T: T, b: b, lx: make([]float64, n), out: make([]float64, n)}
	fk, s := 1.0, 0.0
	for k := range T {
		if k > 0 {
			fk *= float64(2*k-1) / float64(2*k)
		}
		c.f = append(c.f, fk)
		s += fk * fk
		c.c = append(c.c, s)
	}
	// The sensitivity is l2 times the largest column norm of L, of the
	// whole vector of T n released values.
	if err := checkFinite(l2); err != nil {
		return nil, err
	}
	g, err := NewGaussian(b, l2*math.Sqrt(s), nz)
	if err != nil {
		return nil, err
	}
	g.dim = n * int(T)
	c.g = g
	return c, nil
}

func (c *factorisation) Budget() privacy.Budget { return c.b }
func (c *factorisation) Horizon() int64         { return c.T }

// Var returns sigma^2 sum_{k<t} f(k)^2.
func (c *factorisation) Var(t int64) float64 { return c.g.sigma * c.g.sigma * c.c[t-1] }

// Add records x_t, releases w_t = (L x)_t + z_t and returns (L w)_t.
func (c *factorisation) Add(x []float64) ([]float64, error) {
	if err := step(x, c.n, c.t, c.T); err != nil {
		return nil, err
	}
	c.t++
	c.x = append(c.x, x...)
	n, t := c.n, int(c.t)
	conv(c.lx, c.f, c.x, n, t)
	if err := c.g.AddTo(c.lx); err != nil {
		return nil, err
	}
	c.w = append(c.w, c.lx...)
	conv(c.out, c.f, c.w, n, t)
	return c.out, nil
}

// conv sets dst to sum_{k<t} f(k) v_{t-k}, v stored by step (n values
// each, steps 1..t).
func conv(dst, f, v []float64, n, t int) {
	clear(dst)
	for k := range t {
		row := v[(t-1-k)*n : (t-k)*n]
		for i, y := range row {
			dst[i] += f[k] * y
		}
	}
}
