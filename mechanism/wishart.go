package mechanism

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/dpbandit/dpbandit/noise"
)

// Wishart is the calibration of the Wishart mechanism for a second-moment
// matrix C = sum_s z_s z_s^T of vectors z_s in R^P with ||z_s|| <= B:
// release M = C + N with N ~ W_P(Sigma2 I, K), the Gram matrix of K
// independent N(0, Sigma2 I_P) vectors (Sheffet 2015, "Private
// approximations of the 2nd-moment matrix using existing techniques in
// linear regression", adding random samples to the data; cited by 002,
// Section 3). The release is positive semi-definite, and positive
// definite for K >= P.
//
// The published constants could not be checked here (no copy of the
// paper is at hand, and 002's print of K is garbled), so the calibration
// rests on the following derivation, which is complete.
//
// Only principal submatrices M_UU are ever released, U a set of at most
// U coordinates (002 restricts the Gram matrix to the estimated support
// and the reward), and M_UU = C_UU + N_UU with N_UU ~ W_m(Sigma2 I, K),
// m = |U|. Its density is proportional to |W|^((K-m-1)/2)
// exp(-tr W/(2 Sigma2)) at W = M_UU - C_UU. Neighbouring data change one
// z to z' (||z||, ||z'|| <= B), so C'_UU = C_UU - D with D = z_U z_U^T -
// z'_U z'_U^T, and the privacy loss at M is
//
//	L = (K-m-1)/2 ln(|W|/|W + D|) + tr(D)/(2 Sigma2),
//
// where |tr D| <= B^2 and, by the matrix determinant lemma twice,
// |W + D|/|W| = (1 + z^T W^-1 z)(1 - z'^T (W + z z^T)^-1 z') lies in
// [1 - a, 1 + a] with a = B^2/lambda_min(W). So |L| <= (K-m-1)/2
// (-ln(1 - a)) + B^2/(2 Sigma2) whenever a < 1. N_UU is a principal
// submatrix of N = Sigma2 G^T G, G a K x P standard Gaussian matrix, and
// lambda_min(N_UU) >= Sigma2 (sqrt K - sqrt m - t)^2 except with
// probability e^(-t^2/2) (Davidson and Szarek; Vershynin 2012, Corollary
// 5.35) for each U; a union bound over the C(P-1, U-1) sets of U
// coordinates that contain a fixed one (the reward) makes it hold for all
// of them at once with t = sqrt(2 ln(C(P-1, U-1)/delta)). Outside that
// event of probability delta the loss is at most eps when
//
//	(K-U-1)/2 (-ln(1 - a)) + B^2/(2 Sigma2) <= eps,  a = B^2 / (Sigma2 (sqrt K - sqrt U - t)^2),
//
// (m <= U only lowers the left side), so the release is (eps, delta)-DP.
// The sets need not be fixed in advance: when the coordinates released
// are chosen adaptively from earlier releases, the density of everything
// released is the marginal density of M on the union of the sets, and
// the same bound applies to it. NewWishart picks, over a grid of K, the
// smallest Sigma2 meeting the condition (by bisection) and keeps the
// (K, Sigma2) of smallest mean K Sigma2: the release is not centred (it
// stays positive semi-definite), so the noise acts first as a ridge of
// K Sigma2 on the diagonal (002's W(sbar I, k) "regularisation"), its
// fluctuations (Sigma2 sqrt(K) off the diagonal) being smaller. As K
// grows the condition tends to B^2/Sigma2 <= eps, and at a large eps
// the ridge keeps shrinking towards B^2 (a < 1 needs K Sigma2 > B^2
// K/(sqrt K - sqrt U - t)^2). The grid stops at K = 100^2 (sqrt U + t +
// 1)^2, where that factor is below 1.03: K costs nothing in the tree
// (WishartTree draws its nodes through Bartlett's decomposition, one
// chi-square per coordinate whatever K).
type Wishart struct {
	Sigma2 float64
	K      int
	// U is the largest number of coordinates released.
	U int
}

// NewWishart calibrates the mechanism for an (eps, delta) budget, vectors
// of norm at most b in R^p and releases on at most u of their
// coordinates.
func NewWishart(eps, delta, b float64, u, p int) (Wishart, error) {
	switch {
	case !(eps > 0) || math.IsInf(eps, 0):
		return Wishart{}, fmt.Errorf("mechanism: eps must be positive and finite, got %v", eps)
	case !(delta > 0 && delta < 1):
		return Wishart{}, fmt.Errorf("mechanism: delta must lie in (0, 1), got %v", delta)
	case !(b > 0) || math.IsInf(b, 0):
		return Wishart{}, fmt.Errorf("mechanism: the norm bound must be positive and finite, got %v", b)
	case u < 1 || p < u:
		return Wishart{}, fmt.Errorf("mechanism: releases on %d of %d coordinates", u, p)
	}
	lc, _ := math.Lgamma(float64(p))
	l1, _ := math.Lgamma(float64(u))
	l2, _ := math.Lgamma(float64(p - u + 1))
	t := math.Sqrt(2 * (lc - l1 - l2 + math.Log(1/delta)))
	b2 := b * b
	loss := func(k int, s2 float64) float64 {
		g := math.Sqrt(float64(k)) - math.Sqrt(float64(u)) - t
		if g <= 0 {
			return math.Inf(1)
		}
		a := b2 / (s2 * g * g)
		if a >= 1 {
			return math.Inf(1)
		}
		return float64(k-u-1)/2*(-math.Log1p(-a)) + b2/(2*s2)
	}
	best := Wishart{U: u}
	kmax := int(1e4 * math.Pow(math.Sqrt(float64(u))+t+1, 2))
	for k := u + 2; k <= kmax; k = int(math.Ceil(float64(k) * 1.05)) {
		if loss(k, 1e300) > eps {
			continue
		}
		lo, hi := 0.0, b2/eps
		for loss(k, hi) > eps {
			hi *= 2
		}
		for hi-lo > 1e-13*hi { // hi is an upper end with loss <= eps
			mid := (lo + hi) / 2
			if loss(k, mid) > eps {
				lo = mid
			} else {
				hi = mid
			}
		}
		if best.K == 0 || hi*float64(k) < best.Sigma2*float64(best.K) {
			best.K, best.Sigma2 = k, hi
		}
	}
	if best.K == 0 {
		return Wishart{}, fmt.Errorf("mechanism: no Wishart calibration found for eps = %v", eps)
	}
	return best, nil
}

// WishartTree is the tree-based aggregation of 002 Section 3 with
// Wishart nodes: the continual release of the prefix sums G_t = sum_{s
// <= t} z_s z_s^T of vectors z_s in R^P, by the binary mechanism (the
// dyadic blocks of TreeAgg), each node's block sum perturbed once by its
// own Wishart matrix, and G_t released as the sum of the noisy blocks of
// the set bits of t, restricted to a set U of coordinates.
//
// What is materialised. TreeAgg keeps every node dense, O(P^2) for
// matrix nodes, which at P = 1001 is 10^6 numbers per node and per step.
// The learner only ever reads G_t restricted to U (the support and the
// reward), so a node's block sum is kept on U only, and its noise N =
// Sigma2 A, A ~ W(I, K), only on the coordinates it has released, through
// the Cholesky factor of A on them, extended one coordinate at a time
// when the node first releases it. If A = G^T G on n coordinates (G the
// K x n Gaussian factor, A = L L^T) and g ~ N(0, I_K) is the new
// coordinate's column, independent of G, then G^T g given G is N(0, A),
// i.e. L xi with xi ~ N(0, I_n), and ||g||^2 = ||xi||^2 + c with c the
// squared norm of g's part orthogonal to G's columns, chi-square with K -
// n degrees of freedom and independent of xi. So the extended factor is
// L with the row (xi, sqrt c) appended: n standard normals and the root
// of a chi-square(K - n) (Bartlett's decomposition, drawn row by row).
// The noise on every set of coordinates released therefore has exactly
// the dense mechanism's law (the Wishart law is invariant under
// permutations, so the order in which coordinates are added does not
// matter), and a node's noise never changes while it lives. This is the
// paper's mechanism with its dense tree, of which only the entries read
// are computed, at no cost in K: a step costs O(m^3 + m^2 log T) (m =
// |U|), and changing U rebuilds the live blocks' sums from the data in
// O(t m^2) (the data come from a callback: the learner keeps its history
// anyway).
//
// Privacy: a vector enters one node per level, L = floor(log2 T) + 1
// levels; each node is the Wishart mechanism at the calibration given
// (per-node budget), and basic composition over the L levels gives the
// total. The releases are positive semi-definite (tested). The normals
// are drawn from the noise source's Gaussian and the chi-squares by
// Marsaglia and Tsang's method from its Gaussian and Laplace draws
// (chiSquare), exact in floating point on fast noise; on secure noise
// they use that source's discrete Gaussian and Laplace, close to but not
// exactly the continuous law the derivation assumes.
type WishartTree struct {
	w      Wishart
	p      int
	T, t   int64
	nz     noise.Noise
	row    func(s int64) []float64
	u      []int
	levels []wnode // by level: the block at that level, live when bit l of t is set
}

// wnode is one block of the tree.
type wnode struct {
	start, end int64       // the block covers steps start..end
	sum        []float64   // its exact sum on u, m x m
	at         map[int]int // coordinate -> its row in fac
	fac        [][]float64 // the Cholesky factor of A (N = Sigma2 A): row i has i+1 entries
	noise      []float64   // N on u, m x m
}

// WishartLevels returns the number of levels of a tree over horizon T:
// the number of nodes each vector enters.
func WishartLevels(T int64) int { return levelsOf(T) }

// NewWishartTree returns the tree for horizon T over vectors of R^p, whose
// step s (1-based) row(s) returns, nodes calibrated by w.
func NewWishartTree(w Wishart, p int, T int64, row func(s int64) []float64, nz noise.Noise) (*WishartTree, error) {
	if w.U < 1 || w.K < w.U+2 || !(w.Sigma2 > 0) || p < 1 || T < 1 || row == nil || nz == nil {
		return nil, fmt.Errorf("mechanism: bad Wishart tree (%+v, p = %d, T = %d; K must be at least U + 2)", w, p, T)
	}
	return &WishartTree{w: w, p: p, T: T, nz: nz, row: row, levels: make([]wnode, levelsOf(T))}, nil
}

// SetSupport restricts the releases to the coordinates u (increasing,
// in [0, p)): the live blocks' sums are rebuilt on u from the data and
// their noise extended with the new coordinates' columns.
func (w *WishartTree) SetSupport(u []int) error {
	for i, j := range u {
		if j < 0 || j >= w.p || (i > 0 && j <= u[i-1]) {
			return fmt.Errorf("mechanism: coordinates %v are not increasing in [0, %d)", u, w.p)
		}
	}
	w.u = slices.Clone(u)
	for l := range w.levels {
		if w.t>>l&1 == 0 {
			continue
		}
		n := &w.levels[l]
		n.sum = make([]float64, len(u)*len(u))
		for s := n.start; s <= n.end; s++ {
			w.addOuter(n.sum, w.row(s))
		}
		if err := w.noiseOn(n); err != nil {
			return err
		}
	}
	return nil
}

// Add appends step t+1 (its row comes from the callback).
func (w *WishartTree) Add() error {
	if w.t >= w.T {
		return fmt.Errorf("mechanism: the tree's horizon %d is reached", w.T)
	}
	w.t++
	j := bits.TrailingZeros64(uint64(w.t))
	m := len(w.u)
	n := wnode{start: w.t - (int64(1) << j) + 1, end: w.t, sum: make([]float64, m*m)}
	for l := range j {
		for i, x := range w.levels[l].sum {
			n.sum[i] += x
		}
		w.levels[l] = wnode{}
	}
	w.addOuter(n.sum, w.row(w.t))
	if err := w.noiseOn(&n); err != nil {
		return err
	}
	w.levels[j] = n
	return nil
}

// Release returns the private G_t restricted to u (m x m, row-major):
// the sum of the live blocks' noisy sums.
func (w *WishartTree) Release() []float64 {
	m := len(w.u)
	out := make([]float64, m*m)
	for l := range w.levels {
		if w.t>>l&1 == 0 {
			continue
		}
		n := &w.levels[l]
		for i := range out {
			out[i] += n.sum[i] + n.noise[i]
		}
	}
	return out
}

// Nodes returns the number of noisy blocks in the current release.
func (w *WishartTree) Nodes() int {
	c := 0
	for l := range w.levels {
		c += int(w.t >> l & 1)
	}
	return c
}

// addOuter adds z_u z_u^T to sum.
func (w *WishartTree) addOuter(sum, z []float64) {
	m := len(w.u)
	for a, i := range w.u {
		zi := z[i]
		if zi == 0 {
			continue
		}
		for b, j := range w.u {
			sum[a*m+b] += zi * z[j]
		}
	}
}

// noiseOn extends the node's factor with the coordinates of u it has not
// released yet and sets its noise on u.
func (w *WishartTree) noiseOn(n *wnode) error {
	if n.at == nil {
		n.at = map[int]int{}
	}
	for _, j := range w.u {
		if _, ok := n.at[j]; ok {
			continue
		}
		k := len(n.fac)
		if k >= w.w.U {
			return fmt.Errorf("mechanism: a Wishart node would release %d coordinates, above the %d it is calibrated for", k+1, w.w.U)
		}
		r := make([]float64, k+1)
		for i := range k {
			x, err := w.nz.AddGaussian(0, 1, 1)
			if err != nil {
				return err
			}
			r[i] = x
		}
		c, err := chiSquare(w.nz, w.w.K-k)
		if err != nil {
			return err
		}
		r[k] = math.Sqrt(c)
		n.at[j], n.fac = k, append(n.fac, r)
	}
	m := len(w.u)
	n.noise = make([]float64, m*m)
	for a, i := range w.u {
		ri := n.fac[n.at[i]]
		for b := a; b < m; b++ {
			rj := n.fac[n.at[w.u[b]]]
			s := 0.0
			for q := range min(len(ri), len(rj)) {
				s += ri[q] * rj[q]
			}
			n.noise[a*m+b], n.noise[b*m+a] = w.w.Sigma2*s, w.w.Sigma2*s
		}
	}
	return nil
}

// chiSquare draws a chi-square with k >= 2 degrees of freedom, 2
// Gamma(k/2), by Marsaglia and Tsang's method ("A simple method for
// generating gamma variables", 2000) for shape a = k/2 >= 1: with d = a -
// 1/3 and c = 1/sqrt(9 d), draw x ~ N(0, 1) and v = (1 + c x)^3 until v >
// 0 and ln u < x^2/2 + d - d v + d ln v for u ~ U(0, 1); then d v is
// Gamma(a). ln u is drawn as -|Y|, Y ~ Lap(1) (|Y| is Exp(1)), so both
// draws come from the noise source. A try is accepted with probability
// above 0.95 for a >= 1; after 1000 rejections in a row the source is not
// drawing the normal and Laplace laws, and that is an error. (The test
// accepts on equality, a null event for true draws, so that a source
// scaled to 0, as the audits' noise-removed variants are, gives d.)
func chiSquare(nz noise.Noise, k int) (float64, error) {
	if k < 2 {
		return 0, fmt.Errorf("mechanism: a chi-square with %d degrees of freedom (need at least 2)", k)
	}
	d := float64(k)/2 - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for range 1000 {
		x, err := nz.AddGaussian(0, 1, 1)
		if err != nil {
			return 0, err
		}
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		y, err := nz.AddLaplace(0, 1, 1)
		if err != nil {
			return 0, err
		}
		if -math.Abs(y) <= x*x/2+d-d*v+d*math.Log(v) {
			return 2 * d * v, nil
		}
	}
	return 0, errors.New("mechanism: 1000 chi-square draws rejected in a row: the noise source does not draw normal and Laplace variables")
}
