package linear

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

func instance(t *testing.T, spec string, seed uint64) *env.Linear {
	t.Helper()
	i, err := env.Parse(spec, seed)
	if err != nil {
		t.Fatal(err)
	}
	return i.(*env.Linear)
}

func settingFor(l *env.Linear, T int64, seed uint64) bandit.Setting {
	return bandit.Setting{Arms: l.Arms(), Horizon: T, Bounds: l.Bounds(), Actions: l.Actions(),
		Rand: noise.Stream(seed, 1), Noise: noise.Fast{R: noise.Stream(seed, 2)}}
}

// run plays the policy for T steps on the instance's reward streams and
// returns the pulls of each action.
func run(t *testing.T, p bandit.Policy, l *env.Linear, T int64, seed uint64) []int64 {
	t.Helper()
	counts := make([]int64, l.Arms())
	streams := make([]*env.Stream, l.Arms())
	for step := int64(0); step < T; {
		pl := p.Next()
		n := min(pl.Count, T-step)
		if streams[pl.Arm] == nil {
			streams[pl.Arm] = l.Stream(seed, 0, pl.Arm, T)
		}
		s := streams[pl.Arm].Sum(counts[pl.Arm], counts[pl.Arm]+n)
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: s}); err != nil {
			t.Fatal(err)
		}
		counts[pl.Arm] += n
		step += n
	}
	return counts
}

func best(l *env.Linear) int {
	m := l.Means()
	b := 0
	for a := range m {
		if m[a] > m[b] {
			b = a
		}
	}
	return b
}

// TestGOPEEliminates: the optimal action is never eliminated (the good
// event has probability >= 1 - delta), and after phase l every action with
// gap > 4 beta_l is gone (on the good event |<theta~ - theta, b - a>| <=
// 2 beta_l, so max_b <theta~, b - a> > 2 beta_l). Gaps are those of the
// clipped means, whose least-squares fit is slightly biased by clipping,
// hence a margin of 2 on the threshold.
func TestGOPEEliminates(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, b := range []privacy.Budget{privacy.None(), z} {
		for _, v := range []Variant{NoiseTheta, NoiseSums} {
			for seed := range uint64(10) {
				l := instance(t, "linear-sphere:k=10,d=3", seed)
				p, err := NewGOPE(settingFor(l, 1e7, seed), b, 0.001, 0.01, v)
				if err != nil {
					t.Fatal(err)
				}
				run(t, p, l, 1e7, seed)
				m, bst := l.Means(), best(l)
				done := p.phase - 1 // phases completed
				thr := 2 * 4 * math.Ldexp(1, -done)
				for _, a := range p.Active() {
					if m[bst]-m[a] > thr {
						t.Errorf("%v variant %d seed %d: action %d of gap %v survived %d phases", b, v, seed, a, m[bst]-m[a], done)
					}
				}
				if !slices.Contains(p.Active(), bst) {
					t.Errorf("%v variant %d seed %d: the optimal action was eliminated", b, v, seed)
				}
			}
		}
	}
}

func TestGOPEConstantByHand(t *testing.T) {
	l := instance(t, "linear-sphere:k=10,d=3", 1)
	z, _ := privacy.NewZCDP(0.5)
	p, err := NewGOPE(settingFor(l, 1e6, 1), z, 0.001, 0.01, NoiseTheta)
	if err != nil {
		t.Fatal(err)
	}
	// l = 2: beta = 1/4, delta_K2 = 0.001/(10*2*3); w = 2, b = 1/(2 rho) = 1.
	dkl := 0.001 / 60
	f := 3 + 2*math.Sqrt(3*math.Log(2/dkl)) + 2*math.Log(2/dkl)
	want := 8*3/(0.0625)*math.Log(4/dkl) + 2*3/0.25*math.Sqrt(2/0.5*f)
	if got := p.C(2, 3); math.Abs(got-want) > 1e-9*want {
		t.Errorf("c_2 = %v, want Eq. (4) = %v", got, want)
	}
}

// TestAdaCGOPENoiseScale: the noise of each phase is the Gaussian
// mechanism's for sensitivity w g_l, with g_l = max_b ||b||_{V_l^-1}
// recomputed here from the counts actually played and the original
// action vectors, and g_l^2 <= (1 + tol) m / c_l as the design promises.
func TestAdaCGOPENoiseScale(t *testing.T) {
	l := instance(t, "linear-sphere:k=10,d=3", 2)
	rho := 0.3
	z, _ := privacy.NewZCDP(rho)
	p, _ := NewGOPE(settingFor(l, 1e6, 2), z, 0.001, 0.01, NoiseTheta)
	for phase := 1; phase <= 3; phase++ {
		counts := map[int]int64{}
		c := p.C(p.phase, p.des.Dim)
		active := p.Active()
		for p.phase == phase {
			pl := p.Next()
			counts[pl.Arm] += pl.Count
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: 0}); err != nil {
				t.Fatal(err)
			}
		}
		v := mat.NewSymDense(3, nil)
		for a, n := range counts {
			v.SymRankOne(v, float64(n), mat.NewVecDense(3, l.Actions()[a]))
		}
		var inv mat.SymDense
		var ch mat.Cholesky
		ch.Factorize(v)
		_ = ch.InverseTo(&inv)
		g2 := 0.0
		for _, a := range active {
			x := mat.NewVecDense(3, l.Actions()[a])
			g2 = math.Max(g2, mat.Inner(x, &inv, x))
		}
		if math.Abs(p.G-math.Sqrt(g2)) > 1e-9*math.Sqrt(g2) {
			t.Errorf("phase %d: g_l %v, recomputed %v", phase, p.G, math.Sqrt(g2))
		}
		if want := 2 * math.Sqrt(g2) * math.Sqrt(1/(2*rho)); math.Abs(p.Sigma-want) > 1e-9*want {
			t.Errorf("phase %d: sigma %v, want w g_l / sqrt(2 rho) = %v", phase, p.Sigma, want)
		}
		if g2 > 1.01*3/c*(1+1e-9) {
			t.Errorf("phase %d: g_l^2 = %v > (1 + tol) m / c_l = %v", phase, g2, 1.01*3/c)
		}
	}
}

func TestLinearRejectsBadInput(t *testing.T) {
	l := instance(t, "linear-sphere:k=5,d=2", 3)
	s := settingFor(l, 1000, 3)
	bad := s
	bad.Actions = nil
	if _, err := NewGOPE(bad, privacy.None(), 0.01, 0.01, NoiseTheta); err == nil {
		t.Error("no actions accepted")
	}
	big := s
	big.Actions = [][]float64{{1, 0}, {0, 2}, {0, 1}, {1, 1}, {0.1, 0}}
	if _, err := NewGOPE(big, privacy.None(), 0.01, 0.01, NoiseTheta); err == nil {
		t.Error("action of norm 2 accepted")
	}
	if _, err := NewGOPE(s, privacy.None(), 2, 0.01, NoiseTheta); err == nil {
		t.Error("delta=2 accepted")
	}
	p, _ := NewGOPE(s, privacy.None(), 0.01, 0.01, NoiseTheta)
	pl := p.Next()
	if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 2, Sum: 5}); err == nil && pl.Count >= 2 {
		t.Error("a sum of 2 rewards in [-1,1] equal to 5 accepted")
	}
	if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: math.NaN()}); err == nil {
		t.Error("NaN reward accepted")
	}
	pure, _ := privacy.NewPure(1)
	if _, err := NewGOPE(s, pure, 0.01, 0.01, NoiseTheta); err == nil {
		t.Error("AdaC-GOPE with pure DP accepted")
	}
	if _, err := NewDPPE(s, privacy.None()); err == nil {
		t.Error("non-private DP-PE accepted")
	}
}

// laplaceCount counts Laplace releases and checks their sensitivity.
type laplaceCount struct {
	n     int
	sens  []float64
	inner noise.Noise
}

func (l *laplaceCount) AddGaussian(x, s, sens float64) (float64, error) {
	return l.inner.AddGaussian(x, s, sens)
}
func (l *laplaceCount) AddLaplace(x, b, sens float64) (float64, error) {
	l.n++
	l.sens = append(l.sens, sens)
	return l.inner.AddLaplace(x, b, sens)
}

// TestDPPE: one Laplace release of sensitivity w per core-set action per
// batch, L - 1 batches, then one action for the rest of the horizon.
func TestDPPE(t *testing.T) {
	l := instance(t, "linear-sphere:k=10,d=3", 4)
	s := settingFor(l, 1<<16, 4)
	lc := &laplaceCount{inner: s.Noise}
	s.Noise = lc
	e, _ := privacy.NewPure(1)
	p, err := NewDPPE(s, e)
	if err != nil {
		t.Fatal(err)
	}
	supports := 0
	for p.final < 0 {
		supports += len(p.order)
		pl := p.Next()
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: 0.1 * float64(pl.Count)}); err != nil {
			t.Fatal(err)
		}
	}
	if p.phase != 16 || lc.n == 0 {
		t.Errorf("%d batches, %d releases", p.phase-1, lc.n)
	}
	for _, x := range lc.sens {
		if x != 2 {
			t.Fatalf("sensitivity %v, want the width 2 of [-1, 1]", x)
		}
	}
	if got := p.Next(); got.Count < 1 || got.Arm != p.final {
		t.Errorf("final plan %+v", got)
	}
	_ = mechanism.Unit
}
