package mechanism

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

func mustZCDP(t testing.TB, rho float64) privacy.Budget {
	t.Helper()
	b, err := privacy.NewZCDP(rho)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCounter(t testing.TB, kind CounterKind, rho, l2 float64, n int, T int64, nz noise.Noise) Counter {
	t.Helper()
	c, err := NewCounter(kind, mustZCDP(t, rho), l2, n, T, nz)
	if err != nil {
		t.Fatalf("%s T=%d: %v", kind, T, err)
	}
	return c
}

// TestCountersExact: without noise every counter releases the exact
// prefix sums (Honaker's weights sum to one along every path).
func TestCountersExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kind := range CounterKinds {
		for _, T := range []int64{1, 2, 7, 8, 100, 1000} {
			c := mustCounter(t, kind, 1, 1, 2, T, &zeroNoise{})
			s := []float64{0, 0}
			for i := range T {
				x := []float64{r.Float64(), -r.Float64()}
				s[0], s[1] = s[0]+x[0], s[1]+x[1]
				out, err := c.Add(x)
				if err != nil {
					t.Fatal(err)
				}
				for k := range s {
					if math.Abs(out[k]-s[k]) > 1e-9*float64(T) {
						t.Fatalf("%s T=%d t=%d: %v, want %v", kind, T, i+1, out, s)
					}
				}
			}
			if _, err := c.Add([]float64{0, 0}); !errors.Is(err, ErrInput) {
				t.Fatalf("%s: input T+1 accepted: %v", kind, err)
			}
		}
	}
}

// TestCounterInputs: bad inputs are typed errors.
func TestCounterInputs(t *testing.T) {
	b := mustZCDP(t, 1)
	nz := noise.NewFast(1)
	for _, kind := range CounterKinds {
		for _, bad := range []struct {
			l2 float64
			n  int
			T  int64
		}{{1, 0, 8}, {1, 1, 0}, {math.NaN(), 1, 8}, {-1, 1, 8}} {
			if _, err := NewCounter(kind, b, bad.l2, bad.n, bad.T, nz); err == nil {
				t.Fatalf("%s accepts %+v", kind, bad)
			}
		}
		c := mustCounter(t, kind, 1, 1, 1, 8, nz)
		if _, err := c.Add([]float64{math.Inf(1)}); err == nil {
			t.Fatalf("%s accepts +Inf", kind)
		}
		if _, err := c.Add([]float64{1, 2}); !errors.Is(err, ErrInput) {
			t.Fatalf("%s accepts a wrong dimension: %v", kind, err)
		}
	}
	if _, err := NewCounter("nope", b, 1, 1, 8, nz); !errors.Is(err, ErrInput) {
		t.Fatal(err)
	}
	if _, err := NewFactorisation(b, 1, 1, MaxFactorisationT+1, nz); !errors.Is(err, ErrInput) {
		t.Fatal(err)
	}
	if _, err := NewCounter(CounterSmooth, privacy.None(), 1, 1, 8, nz); err == nil {
		t.Fatal("a non-private budget accepted")
	}
}

// meanMaxVar returns the mean and the largest Var(t) over t = 1..T.
func meanMaxVar(c Counter) (mean, mx float64) {
	T := c.Horizon()
	for t := int64(1); t <= T; t++ {
		v := c.Var(t)
		mean += v / float64(T)
		mx = math.Max(mx, v)
	}
	return mean, mx
}

// TestCounterVariances: the variances the accounting gives, at rho = 1
// and l2 = 1, are those of the continual-counting spec's tables
// (continual_counting_check.py), to the digits printed there; and they
// scale as l2^2/rho.
func TestCounterVariances(t *testing.T) {
	nz := noise.NewFast(1)
	cases := []struct {
		kind      CounterKind
		logT      int
		mean, max float64
		tol       float64 // half a unit of the last printed digit
	}{
		{CounterBinary, 4, 5.156, 10, 5e-4},
		{CounterBinary, 10, 27.51, 55, 5e-3},
		{CounterBinary, 20, 105.0, 210, 5e-2},
		{CounterHonaker, 3, 2.371, 4.476, 5e-4},
		{CounterHonaker, 4, 3.545, 6.929, 5e-4},
		{CounterHonaker, 5, 4.979, 9.863, 5e-4},
		{CounterHonaker, 6, 6.670, 13.284, 5e-4},
		{CounterHonaker, 7, 8.615, 17.198, 5e-4},
		{CounterSmooth, 4, 4.5, 4.5, 5e-2},
		{CounterSmooth, 6, 8.0, 8.0, 5e-2},
		{CounterSmooth, 8, 18.0, 18.0, 5e-2},
		{CounterSmooth, 10, 24.5, 24.5, 5e-2},
		{CounterSmooth, 16, 50.0, 50.0, 5e-2},
		{CounterSmooth, 20, 72.0, 72.0, 5e-2},
		{CounterFactorisation, 4, 1.61, 1.89, 5e-3},
		{CounterFactorisation, 6, 2.49, 2.85, 5e-3},
		{CounterFactorisation, 8, 3.56, 4.01, 5e-3},
		{CounterFactorisation, 10, 4.84, 5.35, 5e-3},
		{CounterFactorisation, 16, 9.83, 10.56, 5e-3},
		{CounterTree, 10, 60.5, 60.5, 5e-2}, // L^2/2, L = 11
	}
	for _, tc := range cases {
		T := int64(1) << tc.logT
		c := mustCounter(t, tc.kind, 1, 1, 1, T, nz)
		mean, mx := meanMaxVar(c)
		if math.Abs(mean-tc.mean) > tc.tol || math.Abs(mx-tc.max) > tc.tol {
			t.Errorf("%s T=2^%d: mean %.4f max %.4f, want %v %v", tc.kind, tc.logT, mean, mx, tc.mean, tc.max)
		}
		c2 := mustCounter(t, tc.kind, 0.25, 3, 1, T, nz)
		if got := c2.Var(T); math.Abs(got/c.Var(T)-36) > 1e-9 {
			t.Errorf("%s: Var at l2 = 3, rho = 1/4 is %v times that at 1, 1; want 36", tc.kind, got/c.Var(T))
		}
	}
	if d := SmoothDepth(16); d != 6 {
		t.Errorf("SmoothDepth(16) = %d, want 6 (C(6,3) = 20 > 16 >= C(4,2))", d)
	}
	if d := SmoothDepth(20); d != 8 {
		t.Errorf("SmoothDepth(20) = %d, want 8 (C(6,3) = 20 is not > 20)", d)
	}
}

// recordNoise adds Gaussian noise and records every value it returns.
type recordNoise struct {
	f   noise.Fast
	out []float64
}

func (r *recordNoise) AddGaussian(x, s, l float64) (float64, error) {
	y, err := r.f.AddGaussian(x, s, l)
	r.out = append(r.out, y)
	return y, err
}
func (r *recordNoise) AddLaplace(x, s, l float64) (float64, error) { return r.f.AddLaplace(x, s, l) }

// solve solves M z = b by Gaussian elimination with partial pivoting.
func solve(M [][]float64, b []float64) []float64 {
	n := len(b)
	A := make([][]float64, n)
	for i := range A {
		A[i] = append(append([]float64(nil), M[i]...), b[i])
	}
	for i := range n {
		p := i
		for j := i + 1; j < n; j++ {
			if math.Abs(A[j][i]) > math.Abs(A[p][i]) {
				p = j
			}
		}
		A[i], A[p] = A[p], A[i]
		for j := i + 1; j < n; j++ {
			f := A[j][i] / A[i][i]
			for k := i; k <= n; k++ {
				A[j][k] -= f * A[i][k]
			}
		}
	}
	z := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := A[i][n]
		for k := i + 1; k < n; k++ {
			s -= A[i][k] * z[k]
		}
		z[i] = s / A[i][i]
	}
	return z
}

// TestHonakerIsGLS: Honaker's recursion gives, at every t, the
// generalised least-squares estimate 1^T (A^T A)^-1 A^T y of S_t from the
// noisy nodes y completed by t (node noise i.i.d.), and its variance
// s^2 1^T (A^T A)^-1 1.
func TestHonakerIsGLS(t *testing.T) {
	for _, T := range []int64{13, 16} {
		rec := &recordNoise{f: noise.NewFast(7)}
		c, err := NewHonaker(mustZCDP(t, 0.5), 1, 1, T, rec)
		if err != nil {
			t.Fatal(err)
		}
		type node struct {
			lo, hi int // inputs lo..hi-1 (0-based)
			y      float64
		}
		var nodes []node
		r := rand.New(rand.NewPCG(3, 4))
		s2 := c.(*dyadic).g.sigma * c.(*dyadic).g.sigma
		for step := 1; step <= int(T); step++ {
			out, err := c.Add([]float64{r.Float64()})
			if err != nil {
				t.Fatal(err)
			}
			k := len(nodes)
			for j := range bits.TrailingZeros(uint(step)) + 1 {
				nodes = append(nodes, node{step - 1<<j, step, rec.out[k+j]})
			}
			M := make([][]float64, step)
			for i := range M {
				M[i] = make([]float64, step)
			}
			aty := make([]float64, step)
			for _, nd := range nodes {
				for a := nd.lo; a < nd.hi; a++ {
					aty[a] += nd.y
					for b := nd.lo; b < nd.hi; b++ {
						M[a][b]++
					}
				}
			}
			ones := make([]float64, step)
			for i := range ones {
				ones[i] = 1
			}
			z := solve(M, ones) // M symmetric: 1^T M^-1 = z^T
			est, v := 0.0, 0.0
			for i := range z {
				est += z[i] * aty[i]
				v += z[i]
			}
			if math.Abs(out[0]-est) > 1e-9*(1+math.Abs(est)) {
				t.Fatalf("T=%d t=%d: recursion %v, GLS %v", T, step, out[0], est)
			}
			if got := c.Var(int64(step)); math.Abs(got-s2*v) > 1e-9*got {
				t.Fatalf("T=%d t=%d: Var %v, GLS %v", T, step, got, s2*v)
			}
		}
	}
}

// chiZ returns, for the releases at step t of R independent runs, the
// standardised statistic (Q - R)/sqrt(2R) of Q = sum of e^2/Var(t), e the
// release's error: Q is chi-square with R degrees of freedom when the
// noise is N(0, Var(t)) as the accounting assumes.
func chiZ(t *testing.T, build func(run int) Counter, R int, T int64, at []int64) []float64 {
	t.Helper()
	q := make([]float64, len(at))
	for run := range R {
		c := build(run)
		r := rand.New(rand.NewPCG(uint64(run), 99))
		s := 0.0
		for i := int64(1); i <= T; i++ {
			x := r.Float64()
			s += x
			out, err := c.Add([]float64{x})
			if err != nil {
				t.Fatal(err)
			}
			for k, a := range at {
				if a == i {
					e := out[0] - s
					q[k] += e * e / c.Var(i)
				}
			}
		}
	}
	for k := range q {
		q[k] = (q[k] - float64(R)) / math.Sqrt(2*float64(R))
	}
	return q
}

// chiBound is the bound on |chiZ|: five standard deviations.
const chiBound = 5

// TestCounterNoiseDistribution: the error of the releases at several t
// has the variance the accounting assumes (a chi-square test over R
// runs, per t), for every counter; and a smooth mechanism with the
// reference code's bug (the node variance d/(4 rho) passed as a standard
// deviation: too little noise when it is below 1) and a binary tree
// whose sensitivity forgets the L levels are both caught.
func TestCounterNoiseDistribution(t *testing.T) {
	const R, T = 400, 64
	at := []int64{1, 7, 32, 63, 64}
	for _, kind := range CounterKinds {
		z := chiZ(t, func(run int) Counter {
			return mustCounter(t, kind, 8, 1, 1, T, noise.NewFast(uint64(run), 1))
		}, R, T, at)
		for k, v := range z {
			if math.Abs(v) > chiBound {
				t.Errorf("%s t=%d: chi-square z = %.2f", kind, at[k], v)
			}
		}
	}
	broken := map[string]func(Counter){
		"smooth with the reference code's std = variance": func(c Counter) {
			g := &c.(*smooth).g
			g.sigma = g.sigma * g.sigma // d/(4 rho) = 8/32 as a standard deviation
		},
		"binary tree with sensitivity l2 (not l2 sqrt(L))": func(c Counter) {
			g := &c.(*dyadic).g
			g.sigma /= math.Sqrt(float64(c.(*dyadic).levels))
		},
	}
	for name, breakIt := range broken {
		kind := CounterSmooth
		if name[0] == 'b' {
			kind = CounterBinary
		}
		var honest Counter
		z := chiZ(t, func(run int) Counter {
			c := mustCounter(t, kind, 8, 1, 1, T, noise.NewFast(uint64(run), 2))
			honest = mustCounter(t, kind, 8, 1, 1, T, noise.NewFast(0))
			breakIt(c)
			// The test judges c's errors against the honest accounting.
			return &judged{Counter: c, by: honest}
		}, R, T, at)
		caught := false
		for _, v := range z {
			caught = caught || v < -chiBound
		}
		if !caught {
			t.Errorf("%s not caught: z = %v", name, z)
		}
	}
}

// judged is a counter whose Var is another's: a broken mechanism judged
// against the accounting it claims.
type judged struct {
	Counter
	by Counter
}

func (j *judged) Var(t int64) float64 { return j.by.Var(t) }
