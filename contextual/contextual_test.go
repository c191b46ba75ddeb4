package contextual

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

var box = mechanism.Bounds{Lo: -1, Hi: 1}

func cfg(c float64, b privacy.Budget) Config {
	return Config{Lambda: 0.1, Delta: 0.001, S: 1, C: c, Budget: b}
}

// play runs a policy on the paper's contextual instance and returns the
// regret.
func play(t testing.TB, p Policy, T int64, seed uint64) float64 {
	e, err := env.ParseContextual("contextual-gauss:k=10,d=3", seed)
	if err != nil {
		t.Fatal(err)
	}
	r := e.NewRun(seed, 0)
	reg := 0.0
	for range T {
		acts := r.Next()
		k, err := p.Choose(acts)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(-1)
		for i := range acts {
			best = math.Max(best, r.Value(i))
		}
		reg += best - r.Value(k)
		if err := p.Update(r.Reward(k)); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func setting(T int64, nz noise.Noise) Setting {
	return Setting{Dim: 3, Horizon: T, Bounds: box, Noise: nz}
}

// TestEpisodesBound checks the count of re-estimations of RS-OFUL and
// AdaC-OFUL against Step 5 of Theorem 14's proof: det V grows by 1 + C
// per episode and det V_t <= (lambda + t/d)^d, so
// l(t) <= d/ln(1+C) ln(1 + t/(lambda d)) (plus the first estimate).
func TestEpisodesBound(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, b := range []privacy.Budget{privacy.None(), z} {
		const T = 100000
		p, err := New(setting(T, noise.Fast{R: noise.Stream(1)}), cfg(1, b))
		if err != nil {
			t.Fatal(err)
		}
		play(t, p, T, 1)
		bound := 3/math.Log(2)*math.Log(1+T/(0.1*3)) + 1
		if e := float64(p.Episodes()); e > bound || e < 5 {
			t.Errorf("%v: %v episodes, bound %v", b, e, bound)
		}
	}
}

// TestDrift: after 10^6 steps the incremental V^-1 agrees with a direct
// inverse to 1e-9 of its largest entry, and the incremental log det V with
// a direct one to 1e-9 (documented tolerances); the exact refreshes every
// 2^16 steps keep them there.
func TestDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("10^6 steps")
	}
	for _, c := range []float64{0, 1} {
		p, _ := New(setting(1e6, nil), cfg(c, privacy.None()))
		play(t, p, 1e6, 2)
		maxEntry := 0.0
		for _, v := range p.vinv {
			maxEntry = math.Max(maxEntry, math.Abs(v))
		}
		if d := p.Drift(); d > 1e-9*maxEntry {
			t.Errorf("C=%v: drift %v (largest entry %v)", c, d, maxEntry)
		}
		// log det V by the determinant lemma (a product of ratios since
		// the last refresh) against a Cholesky factorisation.
		inc := p.logdet + math.Log(p.ratio)
		var ch mat.Cholesky
		ch.Factorize(mat.NewSymDense(3, append([]float64(nil), p.v...)))
		if d := math.Abs(inc - ch.LogDet()); d > 1e-9 {
			t.Errorf("C=%v: log det V %v, exact %v", c, inc, ch.LogDet())
		}
	}
}

type gaussCount struct {
	n      int
	sigmas []float64
}

func (g *gaussCount) AddGaussian(x, s, _ float64) (float64, error) {
	g.n++
	g.sigmas = append(g.sigmas, s)
	return x, nil
}
func (g *gaussCount) AddLaplace(x, _, _ float64) (float64, error) { return x, nil }

// TestAdaCOFULReleases: one Gaussian release of d coordinates per
// re-estimation after the first, each of variance 2/rho (sensitivity 2 for
// rewards in [-1, 1] and ||a|| <= 1: Algorithm 3, line 6).
func TestAdaCOFULReleases(t *testing.T) {
	rho := 0.5
	z, _ := privacy.NewZCDP(rho)
	g := &gaussCount{}
	p, err := New(setting(20000, g), cfg(1, z))
	if err != nil {
		t.Fatal(err)
	}
	play(t, p, 20000, 3)
	if g.n != 3*int(p.Episodes()-1) {
		t.Errorf("%d draws for %d episodes", g.n, p.Episodes())
	}
	for _, s := range g.sigmas {
		if math.Abs(s*s-2/rho) > 1e-9 {
			t.Fatalf("variance %v, want 2/rho = %v", s*s, 2/rho)
		}
	}
	// The radius is widened by the noise: larger than RS-OFUL's.
	q, _ := New(setting(20000, nil), cfg(1, privacy.None()))
	play(t, q, 20000, 3)
	if p.radius <= q.radius {
		t.Errorf("private radius %v not above %v", p.radius, q.radius)
	}
}

func TestRejectsBadInput(t *testing.T) {
	p, _ := New(setting(10, nil), cfg(0, privacy.None()))
	for _, acts := range [][][]float64{
		{{0.1, 0.2, math.NaN()}},
		{{0.1, 0.2}},
		{{1, 1, 0}},
		{},
	} {
		if _, err := p.Choose(acts); err == nil {
			t.Errorf("Choose(%v) accepted", acts)
		}
	}
	if err := p.Update(0.5); err == nil {
		t.Error("Update without Choose accepted")
	}
	if _, err := p.Choose([][]float64{{0.5, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Update(math.Inf(1)); err == nil {
		t.Error("infinite reward accepted")
	}
	for _, c := range []Config{{Lambda: 0, Delta: 0.1, S: 1}, {Lambda: 1, Delta: 1, S: 1}, {Lambda: 1, Delta: 0.1, S: 1, C: -1}} {
		c.Budget = privacy.None()
		if _, err := New(setting(10, nil), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	z, _ := privacy.NewZCDP(1)
	if _, err := New(setting(0, noise.Fast{R: noise.Stream(1)}), cfg(1, z)); err == nil {
		t.Error("AdaC-OFUL without a horizon accepted")
	}
	// C = 0 would re-estimate from exact sums at every step with no
	// release: not private at any budget.
	if _, err := New(setting(10, noise.Fast{R: noise.Stream(1)}), cfg(0, z)); err == nil || !strings.Contains(err.Error(), "c > 0") {
		t.Errorf("AdaC-OFUL with c = 0 accepted (err %v)", err)
	}
	e, _ := env.ParseContextual("contextual-gauss:k=10,d=3,norm=none", 1)
	r := e.NewRun(1, 0)
	q, _ := New(setting(100, nil), cfg(0, privacy.None()))
	var err error
	for range 100 {
		if _, err = q.Choose(r.Next()); err != nil {
			break
		}
		_ = q.Update(0)
	}
	if err == nil {
		t.Error("actions of norm > 1 without rescaling accepted")
	}
	// Exactly: one ulp of squared norm above 1 is refused, 1 is not.
	q, _ = New(setting(100, nil), cfg(0, privacy.None()))
	if _, err := q.Choose([][]float64{{1, 0, 0}, {1, 0x1p-26, 0}}); err == nil {
		t.Error("an action of squared norm 1 + 2^-52 accepted")
	}
	if _, err := q.Choose([][]float64{{1, 0, 0}, {0, 0.6, 0.8}}); err != nil {
		t.Error(err)
	}
}

// TestOFULSqrtT: OFUL's regret grows like sqrt(T) log T (at most): the
// normalised regret R_T/(sqrt(T) ln T) does not grow from T = 10^3 to 10^5.
func TestOFULSqrtT(t *testing.T) {
	norm := func(T int64) float64 {
		s := 0.0
		for seed := range uint64(5) {
			p, _ := New(setting(T, nil), cfg(0, privacy.None()))
			s += play(t, p, T, 10+seed)
		}
		return s / 5 / (math.Sqrt(float64(T)) * math.Log(float64(T)))
	}
	a, b := norm(1000), norm(100000)
	if b > a {
		t.Errorf("R_T/(sqrt T ln T): %v at 10^3, %v at 10^5", a, b)
	}
}

func benchmark(b *testing.B, d int, c float64, bud privacy.Budget) {
	e, _ := env.ParseContextual("contextual-gauss:k=10,d="+strconv.Itoa(d), 1)
	p, _ := New(Setting{Dim: d, Horizon: 1 << 40, Bounds: box, Noise: noise.Fast{R: noise.Stream(1)}}, cfg(c, bud))
	r := e.NewRun(1, 0)
	for b.Loop() {
		acts := r.Next()
		k, _ := p.Choose(acts)
		_ = p.Update(r.Reward(k))
	}
}

// TestIndex3MatchesIndexSmall: at d = 3 the written-out index chooses, at
// every step of AdaC-OFUL, OFUL and RS-OFUL runs, the action the general
// small-d index chooses, including
// on decision sets with equal actions.
func TestIndex3MatchesIndexSmall(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	e, _ := env.ParseContextual("contextual-gauss:k=10,d=3", 1)
	for _, c := range []Config{cfg(1, z), cfg(0, privacy.None()), cfg(1, privacy.None())} {
		p, err := New(Setting{Dim: 3, Horizon: 20000, Bounds: box, Noise: noise.Fast{R: noise.Stream(3)}}, c)
		if err != nil {
			t.Fatal(err)
		}
		r := e.NewRun(3, 0)
		for step := range 20000 {
			acts := r.Next()
			if step%7 == 0 {
				acts[4] = acts[2] // a tie, which the first action wins
			}
			if !p.Open() { // as Choose would, before its index
				if err := p.reestimate(); err != nil {
					t.Fatal(err)
				}
			}
			served := p.served
			want, err := p.indexSmall(acts)
			if err != nil {
				t.Fatal(err)
			}
			p.served = served
			k, err := p.Choose(acts)
			if err != nil || k != want {
				t.Fatalf("%+v, step %d: index3 chose %d (%v), indexSmall %d", c, step, k, err, want)
			}
			if err := p.Update(r.Reward(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkAdaCOFULStep is one step of AdaC-OFUL at d = 3, K = 10,
// context generation included; BenchmarkAdaCOFULPolicy is the policy's
// part alone (Choose and Update), on 4096 decision sets drawn before.
func BenchmarkAdaCOFULStep(b *testing.B) {
	z, _ := privacy.NewZCDP(1)
	benchmark(b, 3, 1, z)
}

func BenchmarkAdaCOFULPolicy(b *testing.B) {
	z, _ := privacy.NewZCDP(1)
	e, _ := env.ParseContextual("contextual-gauss:k=10,d=3", 1)
	p, _ := New(Setting{Dim: 3, Horizon: 1 << 40, Bounds: box, Noise: noise.Fast{R: noise.Stream(1)}}, cfg(1, z))
	r := e.NewRun(1, 0)
	sets := make([][][]float64, 4096)
	rewards := make([]float64, len(sets))
	for i := range sets {
		for _, a := range r.Next() {
			sets[i] = append(sets[i], slices.Clone(a))
		}
		rewards[i] = r.Reward(i % 10)
	}
	i := 0
	for b.Loop() {
		k, _ := p.Choose(sets[i])
		_ = p.Update(rewards[i] * float64(k%2))
		i = (i + 1) % len(sets)
	}
}

// BenchmarkOFULDims shows the O(d^2 K) cost of a step.
func BenchmarkOFULDims(b *testing.B) {
	z, _ := privacy.NewZCDP(1)
	for _, d := range []int{3, 10, 30, 100, 1000} {
		b.Run("d="+strconv.Itoa(d), func(b *testing.B) { benchmark(b, d, 1, z) })
	}
}

// TestLambdaMinSchedule: at every re-estimation the lambda_min in the
// radius is a lower bound on lambda_min(V_tau) (a stale one from the last
// exact computation, valid because V only grows), and equals it when
// d <= K (every episode then serves d actions), up to the rounding of an
// eigensolver. At d = 60, K = 1, lambda = 10^-6 the first episodes last a
// step each, exact computations come every 60 steps, and det V grows by
// about 10^6 per step (10^360 between them): log det V stays finite and
// equal to a direct factorisation (to 1e-9 relative).
func TestLambdaMinSchedule(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, c := range []struct {
		k, d   int
		lambda float64
	}{{10, 3, 0.1}, {1, 60, 1e-6}} {
		e, _ := env.ParseContextual(fmt.Sprintf("contextual-gauss:k=%d,d=%d", c.k, c.d), 1)
		conf := cfg(1, z)
		conf.Lambda = c.lambda
		p, err := New(Setting{Dim: c.d, Horizon: 3000, Bounds: box, Noise: noise.Fast{R: noise.Stream(1)}}, conf)
		if err != nil {
			t.Fatal(err)
		}
		r := e.NewRun(1, 0)
		stale := 0
		for range 3000 {
			ep := p.Episodes()
			acts := r.Next()
			k, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			if p.Episodes() > ep {
				// Eigenvalues are exact to rounding relative to ||V|| <=
				// lambda + t.
				exact, _ := p.lambdaMin()
				tol := 1e-12 * (c.lambda + float64(p.t))
				if p.lmin > exact+tol {
					t.Fatalf("d=%d: lambda_min %v above the exact %v", c.d, p.lmin, exact)
				}
				if p.lmin < exact-tol {
					stale++
				}
			}
			if err := p.Update(r.Reward(k)); err != nil {
				t.Fatal(err)
			}
		}
		if c.d <= c.k && stale > 0 {
			t.Errorf("d=%d: %d stale lambda_min with d <= K", c.d, stale)
		}
		if c.d > c.k && stale == 0 {
			t.Errorf("d=%d: no stale lambda_min: the schedule is not exercised", c.d)
		}
		var ch mat.Cholesky
		p.syncV() // the waiting updates of V applied
		ch.Factorize(mat.NewSymDense(c.d, append([]float64(nil), p.v...)))
		if inc := p.logdet + math.Log(p.ratio); math.IsInf(inc, 0) || math.Abs(inc-ch.LogDet()) > 1e-9*math.Abs(ch.LogDet()) {
			t.Errorf("d=%d: log det V %v, exact %v", c.d, inc, ch.LogDet())
		}
	}
}

// TestSparseActionsAsDense: the disjoint-arm encoding of the data set
// environments makes nine actions in ten zero outside their arm's block,
// and V and V^-1 block-diagonal. The index and the rank-one updates skip
// the rows whose products are exact zeros; the dense computation (kept
// here as the oracle) would add those zeros, which changes no bit. At
// every step of AdaC-OFUL and OFUL on a data set (d = 42 and d = 650)
// and on dense Gaussian actions, the same action is chosen and V, V^-1
// hold the same values (to the bit, but for the sign of a zero). On
// dense actions at d >= 16 the oracle is the dense kernels' definition
// (dense.go): chains of fused multiply-adds, written out here.
func TestSparseActionsAsDense(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, c := range []struct {
		env   string
		steps int
	}{{"dataset:wine", 3000}, {"dataset:digits", 150}, {"dataset:letter", 150}, {"contextual-gauss:k=10,d=20", 1000}} {
		var e env.Contexts
		var err error
		if strings.HasPrefix(c.env, "dataset:") {
			e, err = env.ParseDataset(c.env, 1)
		} else {
			e, err = env.ParseContextual(c.env, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, conf := range []Config{cfg(1, z), cfg(0, privacy.None())} {
			r := e.NewRun(5, 0)
			d := e.Dim()
			p, err := New(Setting{Dim: d, Horizon: int64(c.steps), Bounds: box, Noise: noise.Fast{R: noise.Stream(3)}}, conf)
			if err != nil {
				t.Fatal(err)
			}
			same := func(step int, what string, v, vinv []float64) {
				t.Helper()
				p.syncV()
				for i := range v {
					if !sameValue(v[i], p.v[i]) || !sameValue(vinv[i], p.vinv[i]) {
						t.Fatalf("%s %+v, step %d, %s: entry %d of V, V^-1 is %v, %v; dense %v, %v", c.env, conf, step, what, i, p.v[i], p.vinv[i], v[i], vinv[i])
					}
				}
			}
			for step := range c.steps {
				acts := r.Next()
				if !p.Open() { // as Choose would, before its index
					if err := p.reestimate(); err != nil {
						t.Fatal(err)
					}
					denseTau(t, p)
				}
				want := denseIndex(p, acts)
				k, err := p.Choose(acts)
				if err != nil || k != want {
					t.Fatalf("%s %+v, step %d: chose %d (%v), the dense index %d", c.env, conf, step, k, err, want)
				}
				p.syncV()
				v, vinv := slices.Clone(p.v), slices.Clone(p.vinv)
				denseAdd(v, vinv, acts[k], 1, kernelPath(p))
				if err := p.Update(r.Reward(k)); err != nil {
					t.Fatal(err)
				}
				same(step, "Update", v, vinv)
				if conf.C == 0 {
					denseTau(t, p) // OFUL re-estimates at every step
				} else if step%7 == 3 && p.Open() {
					// A decision whose reward never comes: taken
					// (Take), then withdrawn.
					p.syncV()
					v, vinv := slices.Clone(p.v), slices.Clone(p.vinv)
					kernel := kernelPath(p)
					k, err := p.Take(acts)
					if err != nil {
						t.Fatal(err)
					}
					denseAdd(v, vinv, acts[k], 1, kernel)
					same(step, "Take", v, vinv)
					denseAdd(v, vinv, acts[k], -1, kernelPath(p))
					if err := p.Withdraw(acts[k]); err != nil {
						t.Fatal(err)
					}
					same(step, "Withdraw", v, vinv)
				}
			}
		}
	}
}

// sameValue reports whether x and y are the same float64, +0 and -0 alike.
func sameValue(x, y float64) bool {
	return math.Float64bits(x) == math.Float64bits(y) || x == 0 && y == 0
}

// kernelPath reports whether o's updates take the dense kernels.
func kernelPath(o *OFUL) bool { return o.dense && o.d >= linalg.StripLanes }

// chain is entry i of linalg.MulSym's product of the d x d matrix m and
// x: the chain of fused multiply-adds over j of x_j m_ji.
func chain(m, x []float64, i int) float64 {
	d := len(x)
	s := 0.0
	for j := range d {
		s = math.FMA(x[j], m[j*d+i], s)
	}
	return s
}

// denseIndex is OFUL.index as it was for d > smallDim, every row of every
// action summed; on dense decision sets and V_tau^-1 at d >= 16, the
// dense kernels' index by its definition.
func denseIndex(o *OFUL, actions [][]float64) int {
	d := o.d
	if d <= smallDim {
		return -1
	}
	all := o.tauDense && d >= linalg.StripLanes
	for _, a := range actions {
		all = all && nonzero(a) == span{0, d}
	}
	if all {
		best, bv := -1, math.Inf(-1)
		for k, a := range actions {
			y := make([]float64, d)
			for i := range d {
				y[i] = chain(o.tauM(), a, i)
			}
			q, lin := linalg.Dot2(a, y, o.theta)
			if v := lin + o.radius*math.Sqrt(max(q, 0)); v > bv {
				best, bv = k, v
			}
		}
		return best
	}
	q := make([]float64, len(actions))
	m := o.tauM()[:d*d]
	for i := range d {
		row := m[i*d : i*d+d]
		for k, a := range actions {
			x := a[i]
			q[k] += x * (0.5*row[i]*x + linalg.Dot(row[i+1:], a[i+1:d]))
		}
	}
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		if v := linalg.Dot(o.theta, a) + o.radius*math.Sqrt(max(2*q[k], 0)); v > bv {
			best, bv = k, v
		}
	}
	return best
}

// denseAdd is OFUL's update of V and V^-1 by a chosen action (s = 1)
// and its downdate by a withdrawn one (s = -1) as they were, dense; with
// kernel, as the dense kernels define them.
func denseAdd(v, vinv, a []float64, s float64, kernel bool) {
	d := len(a)
	tmp := make([]float64, d)
	if kernel {
		for i := range d {
			tmp[i] = chain(vinv, a, i)
		}
		q, _ := linalg.Dot2(a, tmp, tmp)
		c := -(s / (1 + s*q))
		for i := range d {
			for j := range d {
				v[i*d+j] = math.FMA(s, a[i]*a[j], v[i*d+j])
				vinv[i*d+j] = math.FMA(c, tmp[i]*tmp[j], vinv[i*d+j])
			}
		}
		return
	}
	for i := range d {
		tmp[i] = linalg.Dot(vinv[i*d:i*d+d], a)
	}
	q := linalg.Dot(a, tmp)
	for i, x := range a {
		if s > 0 {
			linalg.AddScaled(v[i*d:i*d+d], x, a)
			linalg.AddScaled(vinv[i*d:i*d+d], -(1/(1+q))*tmp[i], tmp)
		} else {
			linalg.AddScaled(v[i*d:i*d+d], -x, a)
			linalg.AddScaled(vinv[i*d:i*d+d], 1/(1-q)*tmp[i], tmp)
		}
	}
}

// denseTau checks a re-estimate's V_tau^-1 (a copy of V^-1) and theta~
// (V^-1 times the accumulated sums) against the dense computation.
func denseTau(t *testing.T, o *OFUL) {
	t.Helper()
	d := o.d
	for i := range d {
		th := linalg.Dot(o.vinv[i*d:i*d+d], o.nsum)
		if kernelPath(o) {
			th, _ = linalg.Dot2(o.vinv[i*d:i*d+d], o.nsum, o.nsum)
		}
		if !sameValue(th, o.theta[i]) {
			t.Fatalf("theta~_%d is %v, dense %v", i, o.theta[i], th)
		}
	}
	for i, x := range o.vinv {
		if !sameValue(x, o.tauM()[i]) {
			t.Fatalf("entry %d of V_tau^-1 is %v, of V^-1 %v", i, o.tauM()[i], x)
		}
	}
}

// TestBlocksAsDense: on letter (d = 442, 26 classes of 17 features) V is
// block-diagonal, and the exact computations work block by block; they
// must give the dense computation's V^-1, log det V and lambda_min(V)
// within the rounding bounds of the two: backward-stable Cholesky and
// symmetric eigensolvers err by about d eps cond(V) relatively (the
// inverse) and d eps ||V|| absolutely (an eigenvalue), with ||V|| <=
// lambda + t (actions in the unit ball) and cond(V) <= (lambda + t) /
// lambda; a factor 8 covers the constants.
func TestBlocksAsDense(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	e, err := env.ParseDataset("dataset:letter", 1)
	if err != nil {
		t.Fatal(err)
	}
	d, steps, c := e.Dim(), 3000, cfg(1, z)
	p, err := New(Setting{Dim: d, Horizon: int64(steps), Bounds: box, Noise: noise.Fast{R: noise.Stream(3)}}, c)
	if err != nil {
		t.Fatal(err)
	}
	r := e.NewRun(5, 0)
	for range steps {
		k, err := p.Choose(r.Next())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Update(r.Reward(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.refresh(); err != nil {
		t.Fatal(err)
	}
	if len(p.blocks) != e.Arms() {
		t.Fatalf("%d blocks, want one per class (%d)", len(p.blocks), e.Arms())
	}
	lmin, err := p.lambdaMin()
	if err != nil {
		t.Fatal(err)
	}
	inv, logdet, ok := linalg.InvLogDetSPD(p.v, d)
	exact, err := eigMin(p.v, d)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	eps, top := 0x1p-52, c.Lambda+float64(steps)
	tolInv := 8 * float64(d) * eps * top / c.Lambda / c.Lambda // relative bound times ||V^-1|| <= 1/lambda
	tolEig := 8 * float64(d) * eps * top
	for i := range inv {
		if math.Abs(inv[i]-p.vinv[i]) > tolInv {
			t.Fatalf("V^-1 entry %d: blocks %v, dense %v (tolerance %.2g)", i, p.vinv[i], inv[i], tolInv)
		}
	}
	if lmin-c.Lambda < 1e3*tolEig {
		t.Fatalf("lambda_min %v: every block should have been explored past lambda", lmin)
	}
	if math.Abs(lmin-exact) > tolEig {
		t.Fatalf("lambda_min: blocks %v, dense %v (tolerance %.2g)", lmin, exact, tolEig)
	}
	if got := p.logdet; math.Abs(got-logdet) > float64(d)*tolEig/c.Lambda {
		t.Fatalf("log det V: blocks %v, dense %v", got, logdet)
	}
	t.Logf("%d blocks; lambda_min %v (dense %v), log det %v (dense %v)", len(p.blocks), lmin, exact, p.logdet, logdet)

	// Blocks interleaved (even and odd coordinates, coupled two apart),
	// the smallest eigenvalue in the second: tridiagonal Toeplitz blocks
	// of diagonal 3 and 2, off-diagonal 0.5, whose eigenvalues are
	// diag + cos(pi j / 66), j = 1..65.
	const n = 130
	q := &OFUL{d: n, v: make([]float64, n*n), vinv: make([]float64, n*n), rows: make([]span, n)}
	for i := range n {
		q.v[i*n+i] = float64(3 - i%2)
		if i+2 < n {
			q.v[i*n+i+2], q.v[(i+2)*n+i] = 0.5, 0.5
		}
	}
	if err := q.refresh(); err != nil || len(q.blocks) != 2 {
		t.Fatalf("%d blocks (%v), want 2", len(q.blocks), err)
	}
	got, err := q.lambdaMin()
	if want := 2 + math.Cos(math.Pi*65/66); err != nil || math.Abs(got-want) > 8*n*eps*4 {
		t.Fatalf("lambda_min of the interleaved blocks %v (%v), want %v", got, err, want)
	}
}

// TestSpansShrinkAtRefresh: a row of V^-1 may lose non-zero entries at an
// exact refresh (here V_01 cancels to zero, so that coordinates 0 and 1
// become blocks of their own, while the Sherman-Morrison updates left a
// rounding residue in V^-1_01), and V_tau^-1, copied span by span, must
// still equal V^-1 everywhere after the next re-estimate.
func TestSpansShrinkAtRefresh(t *testing.T) {
	const d = blockDim
	p, err := New(Setting{Dim: d, Horizon: 10, Bounds: box}, cfg(0, privacy.None()))
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := make([]float64, d), make([]float64, d)
	a1[0], a1[1], a2[0], a2[1] = 0.78, 0.14, 0.14, -0.78
	for _, a := range [][]float64{a1, a2} {
		if _, err := p.Choose([][]float64{a}); err != nil {
			t.Fatal(err)
		}
		if err := p.Update(0.5); err != nil {
			t.Fatal(err)
		}
	}
	if p.v[1] != 0 || p.tauM()[1] == 0 {
		t.Fatalf("V_01 = %v, V_tau^-1_01 = %v: the case needs V_01 = 0 and a residue in V^-1", p.v[1], p.tauM()[1])
	}
	if err := p.refresh(); err != nil {
		t.Fatal(err)
	}
	if p.rows[0] != (span{0, 1}) {
		t.Fatalf("row 0 of V^-1 spans %v after the refresh, want [0, 1)", p.rows[0])
	}
	p.tau()
	denseTau(t, p)
}

// TestKeepMax: the branch-free argmax step agrees with `if v > bv { best,
// bv = k, v }` bit for bit over every ordered pair of special and
// ordinary values (NaN never wins, equal maxima keep the first, -0 and
// +0 are equal, infinities), and over every sequence of three of them.
func TestKeepMax(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(-1), -1, math.Copysign(0, -1), 0, 5e-324, 0.5, 0.5, 1, math.MaxFloat64, math.Inf(1)}
	ref := func(best int, bv float64, k int, v float64) (int, float64) {
		if v > bv {
			return k, v
		}
		return best, bv
	}
	for _, a := range vals {
		for _, b := range vals {
			for _, c := range vals {
				best, bv, rb, rv := -1, math.Inf(-1), -1, math.Inf(-1)
				for k, v := range []float64{a, b, c} {
					best, bv = keepMax(best, bv, k, v)
					rb, rv = ref(rb, rv, k, v)
					if best != rb || math.Float64bits(bv) != math.Float64bits(rv) {
						t.Fatalf("after %v: keepMax (%d, %v), reference (%d, %v)", []float64{a, b, c}[:k+1], best, bv, rb, rv)
					}
				}
			}
		}
	}
}

// TestUnusableNoiseRefused: AdaC-OFUL on a noise source that cannot draw
// is refused with noise.ErrNoSource.
func TestUnusableNoiseRefused(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, nz := range []noise.Noise{nil, noise.Fast{}} {
		if _, err := New(Setting{Dim: 3, Horizon: 100, Bounds: box, Noise: nz}, cfg(1, z)); !errors.Is(err, noise.ErrNoSource) {
			t.Errorf("on %#v: %v", nz, err)
		}
	}
}

// TestZeroActionTaken: an action of zero features (a Personalizer action
// without features in an empty context) may be chosen: it adds nothing to
// V, and withdrawing it removes nothing. rankOne's sparse path sliced
// the action at its empty span of non-zero coordinates, [d:0], and
// panicked (found by the service's Personalizer surface).
func TestZeroActionTaken(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	p, err := New(Setting{Dim: 8, Horizon: 100, Bounds: box, Noise: noise.Fast{R: noise.Stream(3)}}, cfg(1, z))
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]float64, 8)
	before := slices.Clone(p.v)
	if _, err := p.Take([][]float64{zero, zero}); err != nil {
		t.Fatal(err)
	}
	if err := p.Withdraw(zero); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, p.v) {
		t.Fatalf("V changed: %v, was %v", p.v, before)
	}
}
