// Package robust holds robust estimation for the robust private batched
// bandits of seed 004 (Charisopoulos, Esfandiari and Mirrokni, robust
// and private stochastic linear bandits): the randomised spectral filter
// for robust mean estimation.
package robust

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/internal/linalg"
)

// Filter is Algorithm 2 of seed 004 (the randomised spectral filter of
// Diakonikolas and Kane 2019 and Prasad et al. 2019): given points X_i
// in R^d and lambda, an upper bound on the top eigenvalue of the inliers'
// covariance known in advance, it repeats
//
//	mu = mean of S, Sigma = covariance of S, (u, v) its top eigenpair;
//	if u <= 4 lambda, return mu;
//	else remove one point of S, X_i with probability proportional to
//	tau_i = <v, X_i - mu>^2,
//
// and returns the mean of the points kept and how many were removed.
// With at most an alpha < 1/4 fraction of outliers it returns, with high
// probability, a mean within C sqrt(lambda (alpha + log(1/delta)/n)) of
// the inliers' (Prasad et al. 2019, Theorem 4, quoted by 004 as Theorem
// A.2); with no outliers the covariance test passes at once and the
// plain mean comes back.
//
// lambda must come from bounds known in advance (for 004's
// M^-1/2 a_i r_i, the declared reward range and the design), never from
// the observed points: a lambda computed from them, as a reading of
// 004's Eq. (13) suggests, grows with the corruption and never triggers
// a removal.
//
// Each removal costs O(d^2) and an expected O(d) per proposal, not
// O(n d): the points are first centred on their coordinate-wise median
// (the filter is translation-equivariant, and centring keeps the
// proposal below tight), the mean and second moment are kept as running
// sums (recomputed exactly every n/8 removals to bound rounding), the top
// eigenpair by a symmetric eigendecomposition (O(d^3)), and the
// point to remove is drawn exactly proportional to tau_i by rejection
// from the proposal proportional to 2(||X_i||^2 + ||mu||^2) >= tau_i (a
// mixture of a Fenwick tree over ||X_i||^2 and a uniform draw over the
// points kept). r supplies the randomness.
func Filter(points [][]float64, lambda float64, r *rand.Rand) (mean []float64, removed int, err error) {
	n := len(points)
	if n == 0 {
		return nil, 0, errorf("no points")
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return nil, 0, errorf("lambda must be positive and finite, got %v", lambda)
	}
	d := len(points[0])
	if d == 0 {
		return nil, 0, errorf("points of dimension 0")
	}
	if err := linalg.CheckRows(points, d, "point", "coordinate"); err != nil {
		return nil, 0, errorf("%w", err)
	}
	center := median(points, d)
	x := make([][]float64, n)
	flat := make([]float64, n*d)
	f := &filter{x: x, d: d, n: n, alive: make([]int, n), pos: make([]int, n), tree: newFenwick(n),
		s1: make([]float64, d), s2: make([]float64, d*d), v: make([]float64, d), mu: make([]float64, d), tmp: make([]float64, d)}
	for i, p := range points {
		x[i] = flat[i*d : i*d+d]
		sq := 0.0
		for a, v := range p {
			x[i][a] = v - center[a]
			sq += x[i][a] * x[i][a]
		}
		if math.IsInf(sq, 0) {
			return nil, 0, errorf("point %d is too large (its squared distance to the median overflows)", i)
		}
		f.alive[i], f.pos[i] = i, i
		f.tree.add(i, sq)
	}
	f.recompute()
	f.vals = make([]float64, d)
	since := 0
	for {
		f.moments()
		u, err := f.topEigen()
		if err != nil {
			return nil, 0, err
		}
		if u <= 4*lambda || len(f.alive) <= 1 {
			mean = make([]float64, d)
			for a := range d {
				mean[a] = f.mu[a] + center[a]
			}
			return mean, n - len(f.alive), nil
		}
		f.remove(f.sample(r))
		if since++; since >= max(n/8, 64) {
			f.recompute()
			since = 0
		}
	}
}

// filter is the state of Filter: the points kept, their running sums.
type filter struct {
	x        [][]float64
	d, n     int
	alive    []int // indices of the points kept
	pos      []int // pos[i]: where i is in alive, -1 once removed
	tree     *fenwick
	s1, s2   []float64 // sum X_i and sum X_i X_i^T over the points kept
	v, mu    []float64
	sigma    []float64
	tmp      []float64
	muNormSq float64
	// the eigendecomposition's workspace
	sym  *mat.SymDense
	eig  mat.EigenSym
	vals []float64
	vecs mat.Dense
}

// recompute sums the kept points' moments afresh.
func (f *filter) recompute() {
	clear(f.s1)
	clear(f.s2)
	d := f.d
	for _, i := range f.alive {
		p := f.x[i]
		for a := range d {
			f.s1[a] += p[a]
			for b := range d {
				f.s2[a*d+b] += p[a] * p[b]
			}
		}
	}
}

// moments sets mu and the covariance sigma from the running sums.
func (f *filter) moments() {
	d, m := f.d, float64(len(f.alive))
	if f.sigma == nil {
		f.sigma = make([]float64, d*d)
	}
	f.muNormSq = 0
	for a := range d {
		f.mu[a] = f.s1[a] / m
		f.muNormSq += f.mu[a] * f.mu[a]
	}
	for a := range d {
		for b := range d {
			f.sigma[a*d+b] = f.s2[a*d+b]/m - f.mu[a]*f.mu[b]
		}
	}
}

// topEigen returns the top eigenvalue of sigma and leaves a unit
// eigenvector of it in v, exactly (to rounding): a symmetric
// eigendecomposition, O(d^3), as Algorithm 2 asks for the top eigenpair.
// (A power iteration stopped once its Rayleigh quotient exceeds the
// threshold scores the points along a direction that is not yet the top
// eigenvector: faster on near-degenerate spectra, but another algorithm,
// whose removals an independent replay of 004's told apart.)
func (f *filter) topEigen() (float64, error) {
	d := f.d
	if f.sym == nil {
		f.sym = mat.NewSymDense(d, nil)
	}
	for a := range d {
		for b := a; b < d; b++ {
			f.sym.SetSym(a, b, f.sigma[a*d+b])
		}
	}
	if !f.eig.Factorize(f.sym, true) {
		return 0, errorf("the eigendecomposition of the covariance did not converge")
	}
	vals := f.eig.Values(f.vals)
	f.eig.VectorsTo(&f.vecs)
	for a := range d {
		f.v[a] = f.vecs.At(a, d-1)
	}
	return vals[d-1], nil
}

// sample draws a kept point with probability proportional to
// tau_i = <v, X_i - mu>^2, by rejection from q_i proportional to
// 2(||X_i||^2 + ||mu||^2), which bounds tau_i (||v|| = 1).
func (f *filter) sample(r *rand.Rand) int {
	m := float64(len(f.alive))
	wx, wmu := f.tree.total(), m*f.muNormSq
	for {
		var i int
		if r.Float64()*(wx+wmu) < wx {
			i = f.tree.find(r.Float64() * wx)
		} else {
			i = f.alive[r.IntN(len(f.alive))]
		}
		if f.pos[i] < 0 { // a removed point, drawn through rounding in the tree
			continue
		}
		p := f.x[i]
		t, sq := 0.0, 0.0
		for a, x := range p {
			t += f.v[a] * (x - f.mu[a])
			sq += x * x
		}
		if r.Float64()*2*(sq+f.muNormSq) < t*t {
			return i
		}
	}
}

// remove takes point i out of the sums, the tree and alive.
func (f *filter) remove(i int) {
	d, p := f.d, f.x[i]
	sq := 0.0
	for a := range d {
		f.s1[a] -= p[a]
		sq += p[a] * p[a]
		for b := range d {
			f.s2[a*d+b] -= p[a] * p[b]
		}
	}
	f.tree.add(i, -sq)
	k, last := f.pos[i], f.alive[len(f.alive)-1]
	f.alive[k], f.pos[last] = last, k
	f.alive = f.alive[:len(f.alive)-1]
	f.pos[i] = -1
}

// fenwick is a binary indexed tree over non-negative weights.
type fenwick struct{ t []float64 }

func newFenwick(n int) *fenwick { return &fenwick{t: make([]float64, n+1)} }

// add adds w to weight i.
func (f *fenwick) add(i int, w float64) {
	for j := i + 1; j < len(f.t); j += j & -j {
		f.t[j] += w
	}
}

// total returns the sum of the weights.
func (f *fenwick) total() float64 {
	s := 0.0
	for j := len(f.t) - 1; j > 0; j -= j & -j {
		s += f.t[j]
	}
	return max(s, 0)
}

// find returns the index i whose weight interval holds x in [0, total).
func (f *fenwick) find(x float64) int {
	i, step := 0, 1
	for step*2 < len(f.t) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if j := i + step; j < len(f.t) && f.t[j] <= x {
			i = j
			x -= f.t[j]
		}
	}
	return min(i, len(f.t)-2)
}

// median returns the coordinate-wise median of the points.
func median(points [][]float64, d int) []float64 {
	out := make([]float64, d)
	col := make([]float64, len(points))
	for a := range d {
		for i, p := range points {
			col[i] = p[a]
		}
		slices.Sort(col)
		out[a] = col[len(col)/2]
	}
	return out
}
