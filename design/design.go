// Package design computes optimal experimental designs for linear bandits:
// G-optimal (equivalently D-optimal) designs of finite action sets by the
// Frank-Wolfe method with away steps, and zeta-nets of the unit ball and
// sphere.
//
// A design pi is a distribution over the actions; V(pi) = sum_a pi(a) a a^T
// and g(pi) = max_a a^T V(pi)^-1 a. By the Kiefer-Wolfowitz theorem
// (Theorem 2 of seed 001; Lattimore and Szepesvari, Theorem 21.1) the
// G-optimal design minimises g and maximises log det V, with g = d at the
// optimum, and one exists with at most d(d+1)/2 support points. Note that
// Definition 5 of seed 001 writes g with the unsquared norm; the optimum
// value d holds for the squared one used here.
package design

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/internal/linalg"
)

// Design is a design over a finite action set.
type Design struct {
	// Weights[a] is pi(a); zero outside the support.
	Weights []float64
	// Support lists the actions with positive weight, increasing.
	Support []int
	// G is max_a a^T V(pi)^-1 a over all actions, in the span of the actions.
	G float64
	// Dim is the dimension m of the span of the actions (<= d).
	Dim int
	// Basis holds an orthonormal basis of that span as columns (d x m), and
	// Coords[a] the coordinates of action a in it.
	Basis  *mat.Dense
	Coords [][]float64
}

// Span returns an orthonormal basis (as the columns of a d x m matrix) of
// the span of the actions and their coordinates in it. Directions whose
// eigenvalue in sum_a a a^T is below 1e-10 of the largest are dropped.
func Span(actions [][]float64) (*mat.Dense, [][]float64, error) {
	if len(actions) == 0 {
		return nil, nil, errorf("no actions")
	}
	d := len(actions[0])
	if d == 0 {
		return nil, nil, errorf("actions have dimension 0")
	}
	m := mat.NewSymDense(d, nil)
	for i, a := range actions {
		if len(a) != d {
			return nil, nil, errorf("action %d has dimension %d, want %d", i, len(a), d)
		}
		for _, x := range a {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, nil, errorf("action %d has a non-finite coordinate", i)
			}
		}
		m.SymRankOne(m, 1, mat.NewVecDense(d, slices.Clone(a)))
	}
	var eig mat.EigenSym
	if !eig.Factorize(m, true) {
		return nil, nil, errorf("eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := slices.Max(vals)
	if top <= 0 {
		return nil, nil, errorf("every action is zero")
	}
	var keep []int
	for i, v := range vals {
		if v > 1e-10*top {
			keep = append(keep, i)
		}
	}
	basis := mat.NewDense(d, len(keep), nil)
	for j, i := range keep {
		for r := range d {
			basis.Set(r, j, vecs.At(r, i))
		}
	}
	coords := make([][]float64, len(actions))
	for i, a := range actions {
		c := make([]float64, len(keep))
		for j := range keep {
			for r := range d {
				c[j] += basis.At(r, j) * a[r]
			}
		}
		coords[i] = c
	}
	return basis, coords, nil
}

// GOptimal returns a design with g(pi) <= (1 + tol) m, m the dimension of
// the span of the actions, and at most m(m+1)/2 support points. It runs
// the Frank-Wolfe method on log det V(pi) with the away steps of Wolfe and
// Atwood and exact line search (step (g_a - m)/(m (g_a - 1)) towards or
// away from action a), from a uniform design on m actions chosen by
// pivoted Gram-Schmidt; V^-1 and every a^T V^-1 a are updated by
// Sherman-Morrison in O(K m) per iteration and recomputed every 64
// iterations. tol must be positive.
func GOptimal(actions [][]float64, tol float64) (*Design, error) {
	if !(tol > 0) || math.IsInf(tol, 0) {
		return nil, errorf("tol must be positive and finite, got %v", tol)
	}
	basis, x, err := Span(actions)
	if err != nil {
		return nil, err
	}
	k, m := len(x), len(x[0])
	pi := make([]float64, k)
	for _, i := range pivots(x, m) {
		pi[i] = 1 / float64(m)
	}
	s := newState(x, pi)
	target := (1 + tol) * float64(m)
	md := float64(m)
	for it := 0; ; it++ {
		if it%64 == 63 {
			s.refresh()
		}
		j, kk := s.extremes()
		if s.g[j] <= target {
			if it == 0 {
				break // g was just computed from scratch
			}
			s.refresh() // confirm without drift
			if j, _ = s.extremes(); s.g[j] <= target {
				break
			}
		}
		if it > 200000 {
			return nil, errorf("Frank-Wolfe did not reach tol %v (g = %v, m = %d)", tol, s.g[j], m)
		}
		if s.g[j]-md >= md-s.g[kk] || s.support() == 1 {
			s.step(j, (s.g[j]-md)/(md*(s.g[j]-1)))
			continue
		}
		// Away step from kk, at most down to weight 0.
		maxAway := s.pi[kk] / (1 - s.pi[kk])
		alpha := maxAway
		if s.g[kk] > 1 {
			alpha = math.Min(maxAway, (md-s.g[kk])/(md*(s.g[kk]-1)))
		}
		s.step(kk, -alpha)
		if alpha == maxAway {
			s.pi[kk] = 0
		}
	}
	if prune(x, s.pi, m) {
		s.pi = normalise(s.pi)
		s.refresh()
	}
	d := &Design{Weights: s.pi, Dim: m, Basis: basis, Coords: x}
	for a, w := range s.pi {
		if w > 0 {
			d.Support = append(d.Support, a)
		}
	}
	j, _ := s.extremes()
	d.G = s.g[j]
	return d, nil
}

// pivots picks m actions spanning R^m by pivoted Gram-Schmidt: each time
// the action with the largest component orthogonal to those chosen.
func pivots(x [][]float64, m int) []int {
	r := make([][]float64, len(x))
	for i := range x {
		r[i] = slices.Clone(x[i])
	}
	var out []int
	for range m {
		best, bn := -1, -1.0
		for i, v := range r {
			if n := dot(v, v); n > bn && !slices.Contains(out, i) {
				best, bn = i, n
			}
		}
		out = append(out, best)
		q := slices.Clone(r[best])
		nq := math.Sqrt(dot(q, q))
		for j := range q {
			q[j] /= nq
		}
		for i := range r {
			c := dot(r[i], q)
			for j := range r[i] {
				r[i][j] -= c * q[j]
			}
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func normalise(p []float64) []float64 {
	s := 0.0
	for _, v := range p {
		s += v
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// state is the Frank-Wolfe iterate: pi, V(pi)^-1 and g_a = x_a^T V^-1 x_a.
type state struct {
	x    [][]float64
	pi   []float64
	vinv *mat.Dense
	g    []float64
	u, w []float64
}

func newState(x [][]float64, pi []float64) *state {
	m := len(x[0])
	s := &state{x: x, pi: pi, vinv: mat.NewDense(m, m, nil), g: make([]float64, len(x)),
		u: make([]float64, m), w: make([]float64, len(x))}
	s.refresh()
	return s
}

// refresh recomputes V^-1 and g from pi.
func (s *state) refresh() {
	m := len(s.x[0])
	v := make([]float64, m*m)
	for a, p := range s.pi {
		if p > 0 {
			for i, xi := range s.x[a] {
				for j, xj := range s.x[a] {
					v[i*m+j] += p * xi * xj
				}
			}
		}
	}
	if inv, ok := linalg.InvSPD(v, m); ok {
		s.vinv = mat.NewDense(m, m, inv)
	} else {
		_ = s.vinv.Inverse(mat.NewDense(m, m, v))
	}
	for a, xa := range s.x {
		s.g[a] = quad(s.vinv, xa)
	}
}

func quad(m *mat.Dense, x []float64) float64 {
	q := 0.0
	for i := range x {
		r := 0.0
		for j := range x {
			r += m.At(i, j) * x[j]
		}
		q += x[i] * r
	}
	return q
}

// support counts the actions with positive weight.
func (s *state) support() int {
	n := 0
	for _, p := range s.pi {
		if p > 0 {
			n++
		}
	}
	return n
}

// extremes returns the action of largest g and the supported action of
// smallest g.
func (s *state) extremes() (hi, lo int) {
	lo = -1
	for a, g := range s.g {
		if g > s.g[hi] {
			hi = a
		}
		if s.pi[a] > 0 && (lo < 0 || g < s.g[lo]) {
			lo = a
		}
	}
	return hi, lo
}

// step moves pi to (1 - gamma) pi + gamma e_a (gamma < 0: away from a) and
// updates V^-1 = ((1-gamma) V + gamma x x^T)^-1 and g by Sherman-Morrison.
func (s *state) step(a int, gamma float64) {
	xa := s.x[a]
	m := len(xa)
	sc, t := 1-gamma, gamma
	for i := range s.pi {
		s.pi[i] *= sc
	}
	s.pi[a] += gamma
	if s.pi[a] < 1e-15 {
		s.pi[a] = 0
	}
	for i := range m {
		r := 0.0
		for j := range m {
			r += s.vinv.At(i, j) * xa[j]
		}
		s.u[i] = r
	}
	den := 1 + t/sc*s.g[a]
	c := t / sc / den
	for i := range m {
		for j := range m {
			s.vinv.Set(i, j, (s.vinv.At(i, j)-c*s.u[i]*s.u[j])/sc)
		}
	}
	for b, xb := range s.x {
		ub := dot(s.u, xb)
		s.g[b] = (s.g[b] - c*ub*ub) / sc
	}
}

// prune moves weight along directions that keep V(pi) and sum pi fixed
// until weights vanish, while the support exceeds m(m+1)/2
// (Caratheodory's theorem in the space of symmetric matrices). It reports
// whether it changed pi.
func prune(x [][]float64, pi []float64, m int) (changed bool) {
	limit := m * (m + 1) / 2
	for {
		var supp []int
		for a, p := range pi {
			if p > 0 {
				supp = append(supp, a)
			}
		}
		if len(supp) <= limit {
			return changed
		}
		// Rows: the upper triangle of x x^T, and a row of ones.
		rows := limit + 1
		a := mat.NewDense(rows, len(supp), nil)
		for c, i := range supp {
			r := 0
			for p := range m {
				for q := p; q < m; q++ {
					a.Set(r, c, x[i][p]*x[i][q])
					r++
				}
			}
			a.Set(r, c, 1)
		}
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDFull) {
			return changed
		}
		var vt mat.Dense
		svd.VTo(&vt)
		// The last right singular vector spans (part of) the null space
		// when there are more columns than rows.
		z := mat.Col(nil, len(supp)-1, &vt)
		// Step t along -z or z until a weight hits zero.
		t, at := math.Inf(1), -1
		for c, i := range supp {
			if z[c] > 1e-12 && pi[i]/z[c] < t {
				t, at = pi[i]/z[c], c
			}
		}
		if at < 0 {
			for c := range z {
				z[c] = -z[c]
			}
			for c, i := range supp {
				if z[c] > 1e-12 && pi[i]/z[c] < t {
					t, at = pi[i]/z[c], c
				}
			}
		}
		if at < 0 {
			return changed
		}
		changed = true
		for c, i := range supp {
			pi[i] = math.Max(0, pi[i]-t*z[c])
		}
		pi[supp[at]] = 0
	}
}

// Counts rounds a design for a sample size c: ceil(c pi(a)) pulls of each
// action (zero outside the support).
func (d *Design) Counts(c float64) []int64 {
	n := make([]int64, len(d.Weights))
	for a, w := range d.Weights {
		if w > 0 {
			n[a] = int64(math.Ceil(c * w))
		}
	}
	return n
}
