package mechanism

import (
	"math"
	"math/bits"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mathext"

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
// rests on the following derivation, which is complete. It bounds the
// exact privacy loss through the laws of two quadratic forms, so that
// the loss's first-order terms cancel; the earlier bound, through the
// extreme eigenvalues of N, added them and was 6-9 times conservative
// (issue 25).
//
// The loss. Only principal submatrices M_SS are ever released, S a set of
// m <= U coordinates that contains the reward's (002 restricts the Gram
// matrix to the estimated support and the reward), and M_SS = C_SS + N_SS
// with N_SS ~ W_m(Sigma2 I, K). Its density is proportional to
// |W|^((K-m-1)/2) exp(-tr W/(2 Sigma2)) at W = M_SS - C_SS. Neighbouring
// data change one z (in the data the release was drawn from) to z'
// (||z||, ||z'|| <= B), so the other data's matrix is C_SS - D with D =
// z_S z_S^T - z'_S z'_S^T. Whiten: Wt = N_SS/Sigma2 ~ W_m(I, K), u =
// z_S/sqrt(Sigma2), u' = z'_S/sqrt(Sigma2), s = ||u||^2 and s' = ||u'||^2,
// both at most beta = B^2/Sigma2. The privacy loss at the release is
//
//	L = (s - s')/2 - c/2 [ln(1 + q) + ln(1 - q')],  c = K - m - 1,
//
// by the matrix determinant lemma twice, with q = u^T Wt^-1 u and q' =
// u'^T (Wt + u u^T)^-1 u' (L is infinite when q' >= 1: the release is
// impossible under the other data).
//
// Two chi-squares. For a fixed direction, X = s/q = ||u||^2/(u^T Wt^-1 u)
// is chi-square with K - m + 1 degrees of freedom (Muirhead 1982,
// "Aspects of Multivariate Statistical Theory", Theorem 3.2.12), and so
// is X' = s'/(u'^T Wt^-1 u'); Wt + u u^T >= Wt gives q' <= s'/X'. Hence
//
//	L <= h1(s, X) + h2(s', X'),
//	h1(s, x) = s/2 - c/2 ln(1 + s/x),  h2(s', x) = -s'/2 - c/2 ln(1 - s'/x),
//
// h1 increasing in X, h2 decreasing in X'. Over m in [1, U], h1 is largest
// at c1 = K - U - 1 and h2 at c2 = K - 2, and chi-square(K - m + 1) lies
// stochastically between chi-square(K - U + 1) and chi-square(K). So with
// x_hi the upper q-quantile of chi-square(K) and x_lo the lower
// q-quantile of chi-square(K - U + 1), X <= x_hi and X' >= x_lo except
// with probability 2q, and then L <= h1(s, x_hi) + h2(s', x_lo) (c1, c2
// in them). Both are convex in s (s') and 0 at 0, so over the norms
// allowed
//
//	L <= l(K, beta) = max(0, h1(beta, x_hi)) + max(0, h2(beta, x_lo)),  beta < x_lo,
//
// nondecreasing in beta. The bound is not loose to first order: at W
// near its mean, h1 + h2 is the sum of the loss's two linear terms in
// the fluctuation of W, which is the loss for orthogonal z and z'; what
// is lost is that the two chi-squares' tails are taken apart (each at q)
// while the true loss adds them as one Gaussian, about sqrt 2 in beta.
//
// Adaptive sets. The sets need not be fixed in advance: when the
// coordinates released are chosen adaptively from earlier releases, the
// density of everything released is the marginal density of M on the
// union S of the sets, at most U coordinates with the reward's, and the
// loss of the output is L_S for that S. A union bound over the N =
// sum_{m=1..U} C(P-1, m-1) such sets with q = delta/(2N) makes L_S <=
// l(K, beta) hold for all of them at once except with probability delta,
// so the release is (eps, delta)-DP when l(K, beta) <= eps.
//
// Choice of K. NewWishart scans a geometric grid of K from U + 2 (up to
// 10^8, coarse then fine), finds for each the largest beta with l(K, beta) <= eps (by
// bisection), that is the smallest Sigma2 = B^2/beta, and keeps the
// (K, Sigma2) of smallest mean K Sigma2: the release is not centred (it
// stays positive semi-definite), so the noise acts first as a ridge of K
// Sigma2 on the diagonal (002's W(sbar I, k) "regularisation"), its
// fluctuations (Sigma2 sqrt(K) off the diagonal) being smaller. At a
// large eps the ridge tends to B^2 (beta < x_lo, about K); at a small
// eps, l is about beta z/sqrt(2K) (z the normal quantile of q), so the
// ridge grows like sqrt(K) and the best K is moderate. K costs nothing in
// the tree (WishartTree draws its nodes through Bartlett's decomposition,
// one chi-square per coordinate whatever K). TestWishartPrivacyLoss
// draws the exact loss and checks both that the calibration is private
// and that it is at most 2 times conservative.
type Wishart struct {
	Sigma2 float64
	K      int
	// U is the largest number of coordinates released.
	U int
}

// wishartBound is l(K, beta) of the Wishart derivation for one K.
type wishartBound struct {
	xHi, xLo, c1, c2 float64
}

// newWishartBound returns the bound at K for releases on at most u
// coordinates, each chi-square tail taken at probability q (ln q = lnq,
// which may be far below the smallest normal float64's logarithm).
func newWishartBound(k, u int, lnq float64) wishartBound {
	return wishartBound{
		xHi: chiSquareQuantile(float64(k), lnq, true),
		xLo: chiSquareQuantile(float64(k-u+1), lnq, false),
		c1:  float64(k - u - 1),
		c2:  float64(k - 2),
	}
}

// chiSquareQuantile returns the x at which the lower tail P(X <= x) (or,
// if upper, the upper tail P(X > x)) of a chi-square with k degrees of
// freedom has logarithm lnq (q below both P(X <= k) and P(X > k)), by
// regula falsi (Illinois) on the tail's logarithm, which is smooth and
// nearly linear there: gonum's inverses fail so deep in the tails. Below
// lnq = -700 the tails underflow float64, and it returns the bracket's
// outer end instead, a bound on the safe side (Laurent and Massart's,
// or P(X <= x) <= (x/2)^(k/2)/Gamma(k/2 + 1) where that is larger).
func chiSquareQuantile(k, lnq float64, upper bool) float64 {
	x := chiSquareSearch(k, lnq, upper)
	if lnq >= minLogTail {
		return x
	}
	a, l := k/2, -lnq
	if upper {
		return 2 * (a + math.Sqrt(k*l) + l)
	}
	lg, _ := math.Lgamma(a + 1)
	return 2 * max(a-math.Sqrt(k*l), math.Exp((lnq+lg)/a)/2)
}

// minLogTail is the smallest log tail chiSquareQuantile computes exactly:
// GammaIncReg and GammaIncRegComp underflow near e^-745.
const minLogTail = -700

// chiSquareSearch is chiSquareQuantile's search, exact for lnq >=
// minLogTail.
func chiSquareSearch(k, lnq float64, upper bool) float64 {
	a := k / 2
	tail := func(y float64) float64 { return math.Log(mathext.GammaIncReg(a, y)) - lnq }
	// Laurent and Massart (2000, Lemma 1) bracket the quantile: with l =
	// -lnq, P(X >= k + 2 sqrt(k l) + 2 l) <= q and P(X <= k - 2 sqrt(k l)) <= q
	// (in y = x/2 below; the median lies below k).
	l := -lnq
	lo, hi := max(0, a-math.Sqrt(k*l)), a
	if upper {
		tail = func(y float64) float64 { return lnq - math.Log(mathext.GammaIncRegComp(a, y)) }
		lo, hi = a, a+math.Sqrt(k*l)+l
	} else if lo == 0 {
		lg, _ := math.Lgamma(a + 1)
		lo = math.Exp((lnq+lg)/a) / 2 // P(X/2 <= y) <= y^a/Gamma(a + 1)
	}
	// tail is increasing in y, negative at lo and positive at hi
	flo, fhi := tail(lo), tail(hi)
	if math.IsInf(flo, 0) && math.IsInf(fhi, 0) || math.IsNaN(flo+fhi) {
		if upper {
			return math.Inf(1)
		}
		return 0
	}
	side := 0
	for range 200 {
		var y float64
		if math.IsInf(flo, 0) || math.IsInf(fhi, 0) {
			y = (lo + hi) / 2
		} else {
			y = (lo*fhi - hi*flo) / (fhi - flo)
		}
		if !(y > lo && y < hi) {
			y = (lo + hi) / 2
		}
		f := tail(y)
		switch {
		case f == 0:
			return 2 * y
		case f < 0:
			lo, flo = y, f
			if side == -1 {
				fhi /= 2
			}
			side = -1
		default:
			hi, fhi = y, f
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
		if hi-lo <= 1e-13*hi {
			break
		}
	}
	if upper {
		return 2 * hi // P(X > x) <= q at the upper end
	}
	return 2 * lo
}

// loss returns the bound on the privacy loss at beta = B^2/Sigma2.
func (w wishartBound) loss(beta float64) float64 {
	if !(beta < w.xLo) {
		return math.Inf(1)
	}
	h1 := beta/2 - w.c1/2*math.Log1p(beta/w.xHi)
	h2 := -beta/2 - w.c2/2*math.Log1p(-beta/w.xLo)
	return max(0, h1) + max(0, h2)
}

// NewWishart calibrates the mechanism for an (eps, delta) budget, vectors
// of norm at most b in R^p and releases on at most u of their
// coordinates, among them a fixed one (the reward's).
func NewWishart(eps, delta, b float64, u, p int) (Wishart, error) {
	switch {
	case !(eps > 0) || math.IsInf(eps, 0):
		return Wishart{}, inputf("eps must be positive and finite, got %v", eps)
	case !(delta > 0 && delta < 1):
		return Wishart{}, inputf("delta must lie in (0, 1), got %v", delta)
	case !(b > 0) || math.IsInf(b, 0):
		return Wishart{}, inputf("the norm bound must be positive and finite, got %v", b)
	case u < 1 || p < u:
		return Wishart{}, inputf("releases on %d of %d coordinates", u, p)
	}
	lnq := math.Log(delta/2) - wishartSets(u, p)
	best := Wishart{U: u}
	bestRidge := math.Inf(1)
	try := func(k int) {
		w := newWishartBound(k, u, lnq)
		if !(w.xLo > 0) || w.loss(w.xLo*1e-12) > eps {
			return
		}
		lo, hi := w.xLo*1e-12, w.xLo // loss(lo) <= eps < loss(hi) = +Inf
		for hi-lo > 1e-13*hi {
			mid := (lo + hi) / 2
			if w.loss(mid) <= eps {
				lo = mid
			} else {
				hi = mid
			}
		}
		if ridge := float64(k) / lo; ridge < bestRidge {
			best.K, best.Sigma2, bestRidge = k, b*b/lo, ridge
		}
	}
	// A coarse scan, which stops once K is 8 times the best K so far,
	// then a fine one around the best: the choice of K only decides how
	// much noise, never whether the release is private.
	step := func(k int, f float64) int { return max(k+1, int(float64(k)*f)) }
	for k := u + 2; k <= 1e8 && (best.K == 0 || k <= 8*best.K); k = step(k, 1.25) {
		try(k)
	}
	if best.K > 0 {
		for k, end := max(u+2, best.K*4/5), best.K*5/4; k <= end; k = step(k, 1.02) {
			try(k)
		}
	}
	if best.K == 0 {
		return Wishart{}, inputf("no Wishart calibration found for eps = %v", eps)
	}
	return best, nil
}

// wishartSets returns ln N, N = sum_{m=1..u} C(p-1, m-1): the number of
// sets of at most u of p coordinates that contain a fixed one.
func wishartSets(u, p int) float64 {
	lc, _ := math.Lgamma(float64(p))
	terms := make([]float64, u)
	for m := 1; m <= u; m++ {
		l1, _ := math.Lgamma(float64(m))
		l2, _ := math.Lgamma(float64(p - m + 1))
		terms[m-1] = lc - l1 - l2
	}
	return floats.LogSumExp(terms)
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
	if err := checkNoise(nz); err != nil {
		return nil, err
	}
	if w.U < 1 || w.K < w.U+2 || !(w.Sigma2 > 0) || p < 1 || T < 1 || row == nil {
		return nil, inputf("bad Wishart tree (%+v, p = %d, T = %d; K must be at least U + 2)", w, p, T)
	}
	return &WishartTree{w: w, p: p, T: T, nz: nz, row: row, levels: make([]wnode, levelsOf(T))}, nil
}

// SetSupport restricts the releases to the coordinates u (increasing,
// in [0, p)): the live blocks' sums are rebuilt on u from the data and
// their noise extended with the new coordinates' columns.
func (w *WishartTree) SetSupport(u []int) error {
	for i, j := range u {
		if j < 0 || j >= w.p || (i > 0 && j <= u[i-1]) {
			return inputf("coordinates %v are not increasing in [0, %d)", u, w.p)
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
		return inputf("the tree's horizon %d is reached", w.T)
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
			return inputf("a Wishart node would release %d coordinates, above the %d it is calibrated for", k+1, w.w.U)
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
		return 0, inputf("a chi-square with %d degrees of freedom (need at least 2)", k)
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
	return 0, inputf("1000 chi-square draws rejected in a row: the noise source does not draw normal and Laplace variables")
}
