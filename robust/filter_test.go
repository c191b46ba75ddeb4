package robust

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/stattest"
)

// inliers draws n points N(mu, I) in R^d.
func inliers(r *rand.Rand, n, d int, mu float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, d)
		for a := range out[i] {
			out[i][a] = mu + r.NormFloat64()
		}
	}
	return out
}

func meanOf(ps [][]float64) []float64 {
	m := make([]float64, len(ps[0]))
	for _, p := range ps {
		for a, x := range p {
			m[a] += x / float64(len(ps))
		}
	}
	return m
}

func dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// filterBound is the error the filter's stopping rule allows, derived
// from it: at the end the kept set S has covariance at most 4 lambda in
// every direction. With G the inliers kept and B the outliers kept, the
// covariance of S along mu_B - mu_G is at least
// |B||G|/|S|^2 ||mu_B - mu_G||^2, so ||mu_S - mu_G|| = |B|/|S|
// ||mu_B - mu_G|| <= sqrt(4 lambda |B|/|G|) <= sqrt(4 lambda alpha/(1 -
// 2 alpha)) when no more inliers than outliers were removed; removing a
// fraction e <= alpha/(1 - alpha) of the inliers moves their mean by at
// most sqrt(lambda e/(1 - e)) (a set of covariance lambda); the inliers'
// own mean is within 4 sqrt(d lambda/n) of the truth (4 standard errors).
func filterBound(alpha, lambda float64, n, d int) float64 {
	e := alpha / (1 - alpha)
	return math.Sqrt(4*lambda*alpha/(1-2*alpha)) + math.Sqrt(lambda*e/(1-e)) + 4*math.Sqrt(float64(d)*lambda/float64(n))
}

// TestFilterRecoversTheMean: with an alpha <= 1/4 fraction of
// adversarial points, placed far away, in a cluster that shifts the mean
// by several inlier standard deviations, or spread on a line, the
// filtered mean lies within filterBound of the true mean while the plain
// mean is thrown off by more; with alpha = 0 it is the plain mean.
func TestFilterRecoversTheMean(t *testing.T) {
	const n, d = 20000, 10
	truth := make([]float64, d)
	for i := range truth {
		truth[i] = 3
	}
	for _, c := range []struct {
		name  string
		alpha float64
		bad   func(r *rand.Rand, i int) []float64
	}{
		{"far", 0.2, func(r *rand.Rand, _ int) []float64 { return constant(d, 1000) }},
		{"cluster", 0.2, func(r *rand.Rand, _ int) []float64 {
			p := constant(d, 3)
			p[0] += 12 + 0.1*r.NormFloat64()
			return p
		}},
		{"line", 0.25, func(r *rand.Rand, _ int) []float64 {
			p := constant(d, 3)
			p[1] += 10 + 20*r.Float64()
			return p
		}},
	} {
		r := rand.New(rand.NewPCG(1, uint64(len(c.name))))
		nb := int(c.alpha * n)
		pts := inliers(r, n-nb, d, 3)
		for i := range nb {
			pts = append(pts, c.bad(r, i))
		}
		r.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		m, removed, err := Filter(pts, 1, r)
		if err != nil {
			t.Fatal(err)
		}
		bound := filterBound(c.alpha, 1, n, d)
		plain := dist(meanOf(pts), truth)
		if e := dist(m, truth); e > bound || plain <= bound {
			t.Errorf("%s: filtered error %.3f (bound %.3f), plain mean's %.3f, %d removed", c.name, e, bound, plain, removed)
		}
	}
	// No outliers: the covariance test passes at once.
	r := rand.New(rand.NewPCG(2, 2))
	pts := inliers(r, n, d, -1)
	m, removed, _ := Filter(pts, 1, r)
	if removed != 0 || dist(m, meanOf(pts)) > 1e-12 {
		t.Errorf("clean data: %d removed, error %v", removed, dist(m, meanOf(pts)))
	}
}

// TestFilterLambdaFromTheData: lambda read off the corrupted data (the
// mean of ||X||^2, a bound on the trace) lets far outliers through, as
// the issue warns: the filter then removes nothing.
func TestFilterLambdaFromTheData(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	pts := inliers(r, 900, 3, 0)
	for range 100 {
		pts = append(pts, constant(3, 500))
	}
	tr := 0.0
	for _, p := range pts {
		for _, x := range p {
			tr += x * x / float64(len(pts))
		}
	}
	if _, removed, _ := Filter(pts, tr, r); removed != 0 {
		t.Errorf("a data-driven lambda = %v still removed %d points", tr, removed)
	}
	if _, removed, _ := Filter(pts, 1, r); removed < 100 {
		t.Errorf("lambda = 1 removed %d of the 100 outliers", removed)
	}
}

// TestFilterSamplesProportionalToScore: one removal step draws point i
// with probability tau_i / sum tau (chi-square over 20000 draws).
func TestFilterSamplesProportionalToScore(t *testing.T) {
	pts := [][]float64{{0, 0}, {1, 0}, {2, 0.5}, {-1, 0}, {4, -0.5}, {-3, 0.2}}
	r := rand.New(rand.NewPCG(4, 4))
	f := &filter{d: 2, n: len(pts), tree: newFenwick(len(pts)), s1: make([]float64, 2), s2: make([]float64, 4),
		v: []float64{1, 0}, mu: make([]float64, 2), tmp: make([]float64, 2), vals: make([]float64, 2)}
	for i, p := range pts {
		f.x = append(f.x, p)
		f.alive = append(f.alive, i)
		f.pos = append(f.pos, i)
		f.tree.add(i, p[0]*p[0]+p[1]*p[1])
	}
	f.recompute()
	f.moments()
	if _, err := f.topEigen(); err != nil {
		t.Fatal(err)
	}
	tau := make([]float64, len(pts))
	sum := 0.0
	for i, p := range pts {
		dv := f.v[0]*(p[0]-f.mu[0]) + f.v[1]*(p[1]-f.mu[1])
		tau[i] = dv * dv
		sum += tau[i]
	}
	counts := make([]int, len(pts))
	for range 20000 {
		counts[f.sample(r)]++
	}
	if p, _ := stattest.ChiSquare(counts, 0, func(k int64) float64 { return tau[k] / sum }); p < 1e-3 {
		t.Errorf("removal draws %v against tau %v: p = %v", counts, tau, p)
	}
}

func TestFilterBadInput(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range []struct {
		pts    [][]float64
		lambda float64
	}{
		{nil, 1},
		{[][]float64{{1, 2}}, 0},
		{[][]float64{{1, 2}}, math.NaN()},
		{[][]float64{{1, 2}}, math.Inf(1)},
		{[][]float64{{1, 2}, {1}}, 1},
		{[][]float64{{1, math.NaN()}}, 1},
		{[][]float64{{}}, 1},
	} {
		if _, _, err := Filter(c.pts, c.lambda, r); err == nil {
			t.Errorf("Filter(%v, %v) accepted", c.pts, c.lambda)
		}
	}
}

func constant(d int, v float64) []float64 {
	p := make([]float64, d)
	for i := range p {
		p[i] = v
	}
	return p
}

// BenchmarkFilter100k: n = 10^5 points in R^10 with 20% of them
// adversarial (far away), filtered.
func BenchmarkFilter100k(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	const n, d = 100000, 10
	pts := inliers(r, n*4/5, d, 0)
	for range n / 5 {
		pts = append(pts, constant(d, 50))
	}
	for b.Loop() {
		if _, _, err := Filter(pts, 1, r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFilterScoresAlongTheTopEigenvector: each round scores the points
// along the covariance's top eigenvector itself (Algorithm 2), also when
// the top two eigenvalues are nearly equal, where a power iteration
// stopped at the threshold would score along a mixture: Sigma v = u v,
// u the largest eigenvalue, to rounding.
func TestFilterScoresAlongTheTopEigenvector(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const n, d = 400, 6
	pts := make([][]float64, n)
	for i := range pts {
		pts[i] = make([]float64, d)
		for a := range d {
			pts[i][a] = r.NormFloat64() * []float64{3, 2.999, 1, 1, 0.5, 0.1}[a]
		}
	}
	f := &filter{d: d, n: n, tree: newFenwick(n), s1: make([]float64, d), s2: make([]float64, d*d),
		v: make([]float64, d), mu: make([]float64, d), tmp: make([]float64, d), vals: make([]float64, d)}
	for i, p := range pts {
		f.x = append(f.x, p)
		f.alive = append(f.alive, i)
		f.pos = append(f.pos, i)
	}
	f.recompute()
	f.moments()
	u, err := f.topEigen()
	if err != nil {
		t.Fatal(err)
	}
	res, norm := 0.0, 0.0
	for a := range d {
		s := 0.0
		for b := range d {
			s += f.sigma[a*d+b] * f.v[b]
		}
		res += (s - u*f.v[a]) * (s - u*f.v[a])
		norm += f.v[a] * f.v[a]
	}
	if math.Sqrt(res) > 1e-9*u || math.Abs(norm-1) > 1e-12 {
		t.Fatalf("||Sigma v - u v|| = %v (u = %v), ||v||^2 = %v", math.Sqrt(res), u, norm)
	}
	for a := range d {
		if f.sigma[a*d+a] > u*(1+1e-12) {
			t.Fatalf("u = %v is below a diagonal entry %v: not the top eigenvalue", u, f.sigma[a*d+a])
		}
	}
}
