package mechanism

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/noise"
)

// TestWishartCalibration: the calibration meets its own condition (the
// loss bound of the derivation is at most eps) and is minimal at its K:
// one percent less Sigma2 breaks it. It is never below the limit B^2/x_lo
// of a release that stays possible, and is found in milliseconds even
// for d = 1000 and deep tails.
func TestWishartCalibration(t *testing.T) {
	for _, c := range []struct {
		eps, delta, b float64
		u, p          int
	}{{1, 1e-6, 1, 2, 2}, {0.5, 1e-5, math.Sqrt2, 20, 1001}, {4, 1e-3, 2, 8, 50}, {1e4 / 30, 1e-5 / 30, math.Sqrt2, 80, 1001}} {
		w, err := NewWishart(c.eps, c.delta, c.b, c.u, c.p)
		if err != nil {
			t.Fatal(err)
		}
		bound := newWishartBound(w.K, c.u, math.Log(c.delta/2)-wishartSets(c.u, c.p))
		beta := c.b * c.b / w.Sigma2
		if l := bound.loss(beta); l > c.eps {
			t.Errorf("%+v: loss bound %v above eps", c, l)
		}
		if l := bound.loss(beta / 0.99); l <= c.eps {
			t.Errorf("%+v: Sigma2 %v is not minimal (loss %v at 0.99 of it)", c, w.Sigma2, l)
		}
		if !(beta < bound.xLo) {
			t.Errorf("%+v: beta %v not below x_lo %v", c, beta, bound.xLo)
		}
		t.Logf("%+v: K = %d, Sigma2 = %.4g, ridge K Sigma2 = %.4g", c, w.K, w.Sigma2, float64(w.K)*w.Sigma2)
	}
	for _, bad := range [][5]float64{{0, 0.1, 1, 2, 2}, {1, 0, 1, 2, 2}, {1, 0.1, 0, 2, 2}, {1, 0.1, 1, 3, 2}} {
		if _, err := NewWishart(bad[0], bad[1], bad[2], int(bad[3]), int(bad[4])); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestChiSquareQuantile: the tail quantiles of the calibration against
// gonum's inverses where those work, and, in the deep tails where they do
// not, against the tail itself (the quantile's tail is q to 1e-9
// relative).
func TestChiSquareQuantile(t *testing.T) {
	for _, k := range []float64{3, 30, 1000, 1e6} {
		for _, q := range []float64{0.1, 1e-4, 1e-12} {
			lo, hi := chiSquareQuantile(k, math.Log(q), false), chiSquareQuantile(k, math.Log(q), true)
			c := distuv.ChiSquared{K: k}
			if want := c.Quantile(q); math.Abs(lo-want) > 1e-9*want {
				t.Errorf("k = %v, q = %v: lower %v, want %v", k, q, lo, want)
			}
			if want := 2 * mathext.GammaIncRegCompInv(k/2, q); math.Abs(hi-want) > 1e-9*want {
				t.Errorf("k = %v, q = %v: upper %v, want %v", k, q, hi, want)
			}
		}
		// Below minLogTail the tails underflow: the quantiles must still be
		// on the safe side, which Chernoff's bound ln P <= -(x - k - k
		// ln(x/k))/2 (both tails), or for the lower tail (x/2)^(k/2)/Gamma(k/2
		// + 1), shows without computing them.
		for _, lnq := range []float64{-701, -800, -1200, -5000} {
			lo, hi := chiSquareQuantile(k, lnq, false), chiSquareQuantile(k, lnq, true)
			rate := func(x float64) float64 { return -(x - k - k*math.Log(x/k)) / 2 }
			if !(hi > k) || rate(hi) > lnq {
				t.Errorf("k = %v, ln q = %v: upper %v is not on the safe side (Chernoff %v)", k, lnq, hi, rate(hi))
			}
			lg, _ := math.Lgamma(k/2 + 1)
			power := k/2*math.Log(lo/2) - lg // ln of (x/2)^(k/2)/Gamma(k/2 + 1), a bound on the lower tail
			if !(lo < k) || (lo > 0 && rate(lo) > lnq && power > lnq*(1-1e-12)) {
				t.Errorf("k = %v, ln q = %v: lower %v is not on the safe side (Chernoff %v)", k, lnq, lo, rate(lo))
			}
		}
		for _, lnq := range []float64{-100, -300, -600} {
			lo, hi := chiSquareQuantile(k, lnq, false), chiSquareQuantile(k, lnq, true)
			if got := math.Log(mathext.GammaIncReg(k/2, lo/2)); math.Abs(got-lnq) > 1e-9*-lnq {
				t.Errorf("k = %v: ln P(X <= %v) = %v, want %v", k, lo, got, lnq)
			}
			if got := math.Log(mathext.GammaIncRegComp(k/2, hi/2)); math.Abs(got-lnq) > 1e-9*-lnq {
				t.Errorf("k = %v: ln P(X > %v) = %v, want %v", k, hi, got, lnq)
			}
		}
	}
}

// wishartLoss draws n exact privacy losses of the Wishart mechanism on m
// = 2 coordinates (N ~ W_2(Sigma2 I, K) by Bartlett's decomposition) at
// each neighbouring pair (z, z') given, with L = (|z|^2 - |z'|^2)/(2
// Sigma2) - (K-3)/2 ln(|W + D|/|W|), D = (z z^T - z' z'^T)/Sigma2, and
// returns for each pair how many exceed each threshold.
func wishartLoss(w Wishart, pairs [][2][2]float64, thresholds []float64, n int, seed uint64) [][]int {
	src := rand.New(rand.NewPCG(seed, 7))
	c1, c2 := distuv.ChiSquared{K: float64(w.K), Src: src}, distuv.ChiSquared{K: float64(w.K - 1), Src: src}
	count := make([][]int, len(pairs))
	for i := range count {
		count[i] = make([]int, len(thresholds))
	}
	c := float64(w.K - 3)
	for range n {
		t11, t21, t22 := math.Sqrt(c1.Rand()), src.NormFloat64(), math.Sqrt(c2.Rand())
		a, b, d := t11*t11, t11*t21, t21*t21+t22*t22 // W/Sigma2 = T T^T
		det := a*d - b*b
		for i, p := range pairs {
			z, y := p[0], p[1]
			da := (z[0]*z[0] - y[0]*y[0]) / w.Sigma2
			db := (z[0]*z[1] - y[0]*y[1]) / w.Sigma2
			dd := (z[1]*z[1] - y[1]*y[1]) / w.Sigma2
			l := math.Inf(1)
			if e := (a+da)*(d+dd) - (b+db)*(b+db); e > 0 && a+da > 0 {
				l = (da+dd)/2 - c/2*math.Log(e/det)
			}
			for j, th := range thresholds {
				if l > th {
					count[i][j]++
				}
			}
		}
	}
	return count
}

// TestWishartPrivacyLoss draws the exact privacy loss of the calibrated
// mechanism (m = P = U = 2, B = 1, delta = 10^-4; 4 x 10^5 draws) at the
// neighbouring pairs of full norm that matter: z' = 0, z = 0, z and z'
// orthogonal (the loss's largest first-order term) and at 60 degrees.
//
// Private: for eps in {0.1, 1, 10}, at no pair does the loss exceed eps
// more often than n delta + 5 sqrt(n delta) (the count is at most
// Binomial(n, delta) if the calibration is private; 5 standard
// deviations). A mechanism calibrated at a quarter of the noise (Sigma2/4)
// must fail that test, which shows its power.
//
// At most 2 times conservative at eps = 1: at the orthogonal pair the loss
// exceeds eps/2 more often than n delta + 5 sqrt(n delta), that is the
// 1 - delta quantile of the loss is above eps/2. (The calibration before
// issue 25 put it at 0.11-0.14.)
func TestWishartPrivacyLoss(t *testing.T) {
	const n, delta = 400000, 1e-4
	s := math.Sqrt(3) / 2
	pairs := [][2][2]float64{{{1, 0}, {0, 0}}, {{0, 0}, {1, 0}}, {{1, 0}, {0, 1}}, {{1, 0}, {0.5, s}}}
	limit := n*delta + 5*math.Sqrt(n*delta)
	for i, eps := range []float64{0.1, 1, 10} {
		w, err := NewWishart(eps, delta, 1, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		broken := w
		broken.Sigma2 /= 4
		got := wishartLoss(w, pairs, []float64{eps, eps / 2}, n, uint64(i))
		bad := wishartLoss(broken, pairs, []float64{eps}, n, uint64(i))
		flagged := false
		for j := range pairs {
			if c := float64(got[j][0]); c > limit {
				t.Errorf("eps = %v, pair %v: loss above eps in %v of %d draws, limit %.0f", eps, pairs[j], c, n, limit)
			}
			flagged = flagged || float64(bad[j][0]) > limit
		}
		if !flagged {
			t.Errorf("eps = %v: the mechanism at Sigma2/4 was not flagged: %v", eps, bad)
		}
		if eps == 1 {
			if c := float64(got[2][1]); c <= limit {
				t.Errorf("eps = 1: the loss exceeds eps/2 in only %v of %d draws (limit %.0f): the calibration is more than 2 times conservative", c, n, limit)
			}
		}
		t.Logf("eps = %v: K = %d, Sigma2 = %.4g; draws above eps by pair %v, above eps/2 %v", eps, w.K, w.Sigma2, col(got, 0), col(got, 1))
	}
}

func col(c [][]int, j int) []int {
	out := make([]int, len(c))
	for i := range c {
		out[i] = c[i][j]
	}
	return out
}

// rows returns n random rows of dimension p with norm at most 1.
func rows(n, p int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, p)
		norm := 0.0
		for j := range out[i] {
			out[i][j] = r.NormFloat64()
			norm += out[i][j] * out[i][j]
		}
		for j := range out[i] {
			out[i][j] /= math.Sqrt(norm)
		}
	}
	return out
}

// TestWishartTreeSums: with negligible noise the releases are the exact
// prefix Gram matrices restricted to the support, before and after the
// support changes (the live blocks are rebuilt from the data), and the
// number of noisy blocks is the number of set bits of t.
func TestWishartTreeSums(t *testing.T) {
	const p, T = 8, 100
	data := rows(T, p, 3)
	w := Wishart{Sigma2: 1e-300, K: p + 2, U: p}
	tree, err := NewWishartTree(w, p, T, func(s int64) []float64 { return data[s-1] }, noise.NewFast(1))
	if err != nil {
		t.Fatal(err)
	}
	supports := map[int64][]int{0: {1, 7}, 16: {0, 2, 7}, 37: {2, 3, 5, 7}, 64: {7}}
	for s := int64(0); s < T; s++ {
		if u, ok := supports[s]; ok {
			if err := tree.SetSupport(u); err != nil {
				t.Fatal(err)
			}
		}
		if err := tree.Add(); err != nil {
			t.Fatal(err)
		}
		u := tree.u
		m := len(u)
		got := tree.Release()
		for a := range m {
			for b := range m {
				want := 0.0
				for _, z := range data[:s+1] {
					want += z[u[a]] * z[u[b]]
				}
				if math.Abs(got[a*m+b]-want) > 1e-12 {
					t.Fatalf("t = %d: entry (%d, %d) = %v, want %v", s+1, u[a], u[b], got[a*m+b], want)
				}
			}
		}
		if c, want := tree.Nodes(), popcount(s+1); c != want {
			t.Fatalf("t = %d: %d blocks, want %d", s+1, c, want)
		}
	}
	if err := tree.Add(); err == nil {
		t.Error("an Add past the horizon accepted")
	}
}

func popcount(t int64) int {
	c := 0
	for ; t > 0; t >>= 1 {
		c += int(t & 1)
	}
	return c
}

// TestWishartTreePSD: every release, at the calibrated noise, is positive
// semi-definite (its smallest eigenvalue is not below -1e-9 of its
// largest), and a node's noise has the Wishart moments: mean K Sigma2 on
// the diagonal (and 0 off it) and variance 2 K Sigma2^2 on the diagonal,
// K Sigma2^2 off it, within 4.5 standard errors over 2000 single-node
// trees (the sample variance's standard error is var sqrt((2 + kappa)/n),
// kappa the excess kurtosis: 12/K for the scaled chi-square on the
// diagonal, 6/K for the sum of K products off it).
func TestWishartTreePSD(t *testing.T) {
	const p, T = 30, 64
	data := rows(T, p, 5)
	w, err := NewWishart(1, 1e-5, 1, 7, p) // 3 coordinates, the last shared, over 4 supports

	if err != nil {
		t.Fatal(err)
	}
	tree, _ := NewWishartTree(w, p, T, func(s int64) []float64 { return data[s-1] }, noise.NewFast(2))
	for s := range T {
		if s%16 == 0 {
			if err := tree.SetSupport([]int{s / 16, 10 + s/16, 29}); err != nil {
				t.Fatal(err)
			}
		}
		tree.Add()
		m := len(tree.u)
		var e mat.EigenSym
		if !e.Factorize(mat.NewSymDense(m, tree.Release()), false) {
			t.Fatal("eigendecomposition failed")
		}
		v := e.Values(nil)
		if v[0] < -1e-9*v[m-1] {
			t.Fatalf("t = %d: eigenvalues %v", s+1, v)
		}
	}
	const n = 2000
	var d1, d2, o1, o2 float64
	for i := range n {
		tr, _ := NewWishartTree(w, 2, 1, func(int64) []float64 { return []float64{0, 0} }, noise.NewFast(uint64(i)))
		tr.SetSupport([]int{0, 1})
		tr.Add()
		r := tr.Release()
		d1, d2 = d1+r[0], d2+r[0]*r[0]
		o1, o2 = o1+r[1], o2+r[1]*r[1]
	}
	k, s2 := float64(w.K), w.Sigma2
	md, vd := d1/n, d2/n-(d1/n)*(d1/n)
	mo, vo := o1/n, o2/n-(o1/n)*(o1/n)
	if math.Abs(md-k*s2) > 4.5*math.Sqrt(2*k/n)*s2 || math.Abs(mo) > 4.5*math.Sqrt(k/n)*s2 {
		t.Errorf("means %v, %v; want %v, 0", md, mo, k*s2)
	}
	if math.Abs(vd-2*k*s2*s2) > 4.5*math.Sqrt((2+12/k)/n)*2*k*s2*s2 || math.Abs(vo-k*s2*s2) > 4.5*math.Sqrt((2+6/k)/n)*k*s2*s2 {
		t.Errorf("variances %v, %v; want %v, %v", vd, vo, 2*k*s2*s2, k*s2*s2)
	}
}

// TestChiSquare: the chi-square sampler of the Wishart nodes against the
// chi-square CDF (Kolmogorov-Smirnov, 20000 draws, p > 10^-3 at fixed
// seeds), from the smallest degrees of freedom a node uses (2) to the
// thousands of a calibration; the same test rejects the draws against the
// CDF of one more degree of freedom (p < 10^-6 at 10 degrees), so it can
// tell an off-by-one in the degrees of freedom.
func TestChiSquare(t *testing.T) {
	const n = 20000
	draw := func(k int, seed uint64) []float64 {
		nz := noise.NewFast(seed)
		x := make([]float64, n)
		for i := range x {
			c, err := chiSquare(nz, k)
			if err != nil {
				t.Fatal(err)
			}
			x[i] = c
		}
		return x
	}
	for i, k := range []int{2, 3, 10, 1000, 6600} {
		if _, p := stattest.KSOne(draw(k, uint64(i)), distuv.ChiSquared{K: float64(k)}.CDF); p < 1e-3 {
			t.Errorf("k = %d: KS p = %v", k, p)
		}
	}
	if _, p := stattest.KSOne(draw(10, 9), distuv.ChiSquared{K: 11}.CDF); p > 1e-6 {
		t.Errorf("chi-square(10) draws not told from chi-square(11): p = %v", p)
	}
	if _, err := chiSquare(noise.NewFast(1), 1); err == nil {
		t.Error("1 degree of freedom accepted")
	}
}

// TestWishartTreeExtension: a node whose coordinates are released one at
// a time (the factor extended row by row) has the dense mechanism's law
// on them, Sigma2 G^T G with G a K x 3 Gaussian matrix: two-sample
// Kolmogorov-Smirnov tests (3000 draws each, p > 10^-3 at fixed seeds) on
// the smallest eigenvalue, the last diagonal entry and the entry between
// the first and last coordinates, at K = 5, where the Wishart law is far
// from Gaussian. The same tests reject the dense law at K + 2 (p <
// 10^-6), so they can see a wrong degree of freedom in the extension.
func TestWishartTreeExtension(t *testing.T) {
	const n, k = 3000, 5
	w := Wishart{Sigma2: 0.7, K: k, U: 3}
	stats := func(a []float64) [3]float64 {
		var e mat.EigenSym
		e.Factorize(mat.NewSymDense(3, a), false)
		return [3]float64{e.Values(nil)[0], a[8], a[2]}
	}
	var inc, dense, wide [3][]float64
	r := rand.New(rand.NewPCG(4, 4))
	denseDraw := func(k int) [3]float64 {
		a := make([]float64, 9)
		for range k {
			g := [3]float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
			for i := range 3 {
				for j := range 3 {
					a[i*3+j] += w.Sigma2 * g[i] * g[j]
				}
			}
		}
		return stats(a)
	}
	for i := range n {
		tr, err := NewWishartTree(w, 3, 1, func(int64) []float64 { return []float64{0, 0, 0} }, noise.NewFast(uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		tr.SetSupport([]int{1})
		tr.Add()
		tr.SetSupport([]int{0, 1})
		tr.SetSupport([]int{0, 1, 2})
		s, d, x := stats(tr.Release()), denseDraw(k), denseDraw(k+2)
		for j := range 3 {
			inc[j], dense[j], wide[j] = append(inc[j], s[j]), append(dense[j], d[j]), append(wide[j], x[j])
		}
	}
	for j, name := range []string{"lambda_min", "last diagonal entry", "entry (0, 2)"} {
		if _, p := stattest.KSTwo(inc[j], dense[j]); p < 1e-3 {
			t.Errorf("%s: incremental against dense, KS p = %v", name, p)
		}
	}
	if _, p := stattest.KSTwo(inc[1], wide[1]); p > 1e-6 {
		t.Errorf("the test cannot tell K from K + 2: p = %v", p)
	}
}

// zero is a noise source that adds nothing.
type zero struct{}

func (zero) AddGaussian(x, _, _ float64) (float64, error) { return x, nil }
func (zero) AddLaplace(x, _, _ float64) (float64, error)  { return x, nil }

// constant is a noise source that always adds 50.
type constant struct{}

func (constant) AddGaussian(x, _, _ float64) (float64, error) { return x + 50, nil }
func (constant) AddLaplace(x, _, _ float64) (float64, error)  { return x + 50, nil }

// TestChiSquareDegenerateSources: the sampler terminates on sources that
// do not draw the laws it assumes: one that adds nothing (the audits'
// noise-removed variants) gives 2(k/2 - 1/3), one whose every draw is
// rejected is an error after 1000 tries instead of a loop.
func TestChiSquareDegenerateSources(t *testing.T) {
	if c, err := chiSquare(zero{}, 10); err != nil || math.Abs(c-(10-2.0/3)) > 1e-12 {
		t.Errorf("zero source: %v, %v", c, err)
	}
	if _, err := chiSquare(constant{}, 10); err == nil {
		t.Error("a source whose draws are all rejected gave a value")
	}
}
