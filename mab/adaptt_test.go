package mab

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// The constants of AdaP-TT's and TT-UCB's rules, against values computed
// by hand from the authors' code (adapTT.py: emp_c, Kappa,
// compute_priv_ucb_leader; toptwo_ucb.py: emp_c, Kappa).
func TestAdaPTTConstants(t *testing.T) {
	cases := []struct {
		name      string
		got, want float64
	}{
		// ln 100 + ln(1 + ln 1) + ln(1 + ln 1) + (1 + 1) ln(100)^2 / 1^2
		{"c(1,1,0.01,1)", AdaPTTThreshold(1, 1, 0.01, 1), 47.02035506981529},
		// ln 10 + ln(1 + ln 8) + ln(1 + ln 32) + (1/8 + 1/32) ln(10)^2 / 0.5^2
		{"c(8,32,0.1,0.5)", AdaPTTThreshold(8, 32, 0.1, 0.5), 8.237453691556505},
		{"c(8,32,0.1,inf)", AdaPTTThreshold(8, 32, 0.1, math.Inf(1)), 4.9237673725075055},
		{"kappa(16)", AdaPTTKappa(16), 0.2},
		// 0.5 + ln(100)/(2*4) + sqrt(ln(100)/(2*4))
		{"index(0.5,4,100,2)", AdaPTTIndex(0.5, 4, 100, 2), 1.8343598379410846},
		// dp_c: x = ln(4 zeta 9 / 0.01)/2; 2 (x + ln x) + 2 ln(4 + ln 4) + 2 ln(4 + ln 8)
		// + (1/4 + 1/8) ln(2 5 zeta 9 / 0.01)^2 / 0.5^2, zeta = pi^2/6
		{"dp_c(4,8,K=5,ph=3,0.01,0.5)", AdaPTTTheoryThreshold(4, 8, 5, 3, 0.01, 0.5), 156.91835011967382},
		{"dp_c(4,8,K=5,ph=3,0.01,inf)", AdaPTTTheoryThreshold(4, 8, 5, 3, 0.01, math.Inf(1)), 18.601150771670973},
		{"tt kappa(15)", TTUCBKappa(15), 0.7749588404510429},
		{"tt c(100,0.01)", TTUCBThreshold(100, 0.01), 6.328859605296237},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-12*math.Abs(c.want) {
			t.Errorf("%s = %.16g, want %.16g", c.name, c.got, c.want)
		}
	}
}

// TestAdaPTTPhasesAndNoise: every arm is pulled once first; an arm's
// phases have sizes 1, 1, 2, 4, ... (a phase closes when its count equals
// the arm's completed samples); each phase's mean gets one Laplace draw,
// of scale 1/(eps n), when it closes, and no other draw is made.
func TestAdaPTTPhasesAndNoise(t *testing.T) {
	nz := &laplaceCounter{}
	b, _ := privacy.NewPure(0.5)
	const k = 3
	p, err := NewAdaPTT(setting(k, nz), b, 0.01, 0.5, ThresholdExperiments)
	if err != nil {
		t.Fatal(err)
	}
	r := noise.Stream(3)
	means := []float64{0.7, 0.5, 0.4}
	sizes := make([][]int64, k)
	open := make([]int64, k)
	for step := range 5000 {
		pl := p.Next()
		if pl.Count != 1 {
			t.Fatalf("step %d: plan %+v, want single pulls", step, pl)
		}
		if step < k && pl.Arm != step {
			t.Fatalf("step %d: arm %d, want every arm once first", step, pl.Arm)
		}
		x, _ := noise.Binomial(r, 1, means[pl.Arm])
		before := nz.draws
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: float64(x)}); err != nil {
			t.Fatal(err)
		}
		open[pl.Arm]++
		switch nz.draws - before {
		case 0:
		case 1:
			n := 1 / (0.5 * nz.scales[len(nz.scales)-1])
			if math.Abs(n-float64(open[pl.Arm])) > 1e-9 {
				t.Fatalf("step %d: scale for %v rewards, the phase has %d", step, n, open[pl.Arm])
			}
			sizes[pl.Arm] = append(sizes[pl.Arm], open[pl.Arm])
			open[pl.Arm] = 0
		default:
			t.Fatalf("step %d: %d draws", step, nz.draws-before)
		}
		if _, _, ok := p.Decision(); ok {
			break
		}
	}
	if int64(nz.draws) != p.Episodes() {
		t.Errorf("%d draws for %d phases", nz.draws, p.Episodes())
	}
	for a, s := range sizes {
		want := int64(1)
		var done int64
		for i, n := range s {
			if n != want {
				t.Fatalf("arm %d: phase sizes %v, phase %d should have %d", a, s, i, want)
			}
			done += n
			want = done
		}
		if len(s) < 3 {
			t.Errorf("arm %d: only %d phases", a, len(s))
		}
	}
}

// TestAdaPTTStoppingRule checks, at every step of runs with exact means
// (a noise source that records scales and adds nothing), that the policy
// has stopped exactly when the rule written from the code holds at a
// phase close: for the leader B of the private-UCB index and every
// j != B, (mu_B - mu_j)^2 / (2 (1/n + 1/m)) >= c(n, m), with n, m the last
// phases' sizes; and that it then recommends argmax of the private means
// and reports the pulls made.
func TestAdaPTTStoppingRule(t *testing.T) {
	for _, c := range []struct {
		eps float64
		th  Threshold
	}{{0, ThresholdExperiments}, {0.3, ThresholdExperiments}, {2, ThresholdExperiments}, {0.3, ThresholdTheory}, {0, ThresholdTheory}} {
		eps := c.eps
		b := privacy.None()
		if eps > 0 {
			b, _ = privacy.NewPure(eps)
		} else {
			eps = math.Inf(1)
		}
		for seed := range uint64(20) {
			st := setting(3, &laplaceCounter{})
			st.Rand = noise.Stream(seed)
			p, err := NewAdaPTT(st, b, 0.05, 0.5, c.th)
			if err != nil {
				t.Fatal(err)
			}
			means := []float64{0.8, 0.5, 0.45}
			r := noise.Stream(seed, 1)
			var pulls int64
			for pulls < 1e6 {
				pl := p.Next()
				x, _ := noise.Binomial(r, 1, means[pl.Arm])
				phases := p.Episodes()
				if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: float64(x)}); err != nil {
					t.Fatal(err)
				}
				pulls++
				arm, tau, ok := p.Decision()
				want := p.Episodes() > phases && pulls > 3 && ruleHolds(p, eps, 0.05, c.th == ThresholdTheory)
				if ok != want {
					t.Fatalf("eps %v seed %d pull %d: stopped %v, the rule says %v", eps, seed, pulls, ok, want)
				}
				if ok {
					mu := p.Released()
					best := 0
					for j := range mu {
						if mu[j].Mean > mu[best].Mean {
							best = j
						}
					}
					if arm != best || tau != pulls {
						t.Fatalf("eps %v seed %d: decision (%d, %d), want (%d, %d)", eps, seed, arm, tau, best, pulls)
					}
					if ph, _ := p.Phased(); ph >= pulls || ph < pulls/2 {
						t.Errorf("eps %v seed %d: %d samples in completed phases of %d pulls", eps, seed, ph, pulls)
					}
					break
				}
			}
			if _, _, ok := p.Decision(); !ok {
				t.Fatalf("eps %v seed %d: no stop in 1e6 pulls", eps, seed)
			}
		}
	}
}

// ruleHolds is AdaP-TT's stopping rule, written from adapTT.py
// (check_stopping, emp_c or dp_c, compute_priv_ucb_leader) on the
// policy's completed counts, last phases' sizes and private means; dp_c's
// phase index is the larger of the two arms' (phases of sizes 1, 1, 2, 4,
// ...: N = 2^(ph-1)).
func ruleHolds(p *AdaPTT, eps, delta float64, theory bool) bool {
	var total float64
	for _, n := range p.counts {
		total += float64(n)
	}
	leader, best := 0, math.Inf(-1)
	for a, v := range p.values {
		s := float64(p.last[a])
		ucb := v + math.Log(total)/(eps*s) + math.Sqrt(math.Log(total)/(2*s))
		if ucb > best {
			leader, best = a, ucb
		}
	}
	n := float64(p.last[leader])
	l := math.Log(1 / delta)
	for j, v := range p.values {
		m := float64(p.last[j])
		d := p.values[leader] - v
		c := l + math.Log(1+math.Log(n)) + math.Log(1+math.Log(m)) + (1/n+1/m)*l*l/(eps*eps)
		if theory {
			k, z := float64(len(p.values)), math.Pi*math.Pi/6
			ph := math.Floor(math.Log2(float64(max(p.counts[leader], p.counts[j])))) + 1
			x := 0.5 * math.Log((k-1)*z*ph*ph/delta)
			c = 2*(x+math.Log(x)) + 2*math.Log(4+math.Log(n)) + 2*math.Log(4+math.Log(m)) +
				(1/n+1/m)*math.Pow(math.Log(2*k*z*ph*ph/delta), 2)/(eps*eps)
		}
		if j != leader && 0.5*d*d/(1/n+1/m) < c {
			return false
		}
	}
	return true
}

// identify runs a best-arm identification policy on Bernoulli means until
// it stops (at most limit pulls) and returns its decision.
func identify(t testing.TB, p bandit.Policy, means []float64, limit int64, seed uint64) (int, int64, bool) {
	id := p.(bandit.Identifier)
	r := noise.Stream(seed, 7)
	for pulls := int64(0); pulls < limit; {
		if arm, tau, ok := id.Decision(); ok {
			return arm, tau, true
		}
		pl := p.Next()
		n := min(pl.Count, limit-pulls)
		x, _ := noise.Binomial(r, n, means[pl.Arm])
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: float64(x)}); err != nil {
			t.Fatal(err)
		}
		pulls += n
	}
	return id.Decision()
}

func TestAdaPTTBadInput(t *testing.T) {
	b, _ := privacy.NewPure(1)
	st := setting(3, noise.NewFast(1))
	for _, c := range []struct{ delta, beta float64 }{{0, 0.5}, {1, 0.5}, {math.NaN(), 0.5}, {0.1, 0}, {0.1, 1}, {0.1, math.NaN()}} {
		if _, err := NewAdaPTT(st, b, c.delta, c.beta, ThresholdExperiments); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("delta %v beta %v: err %v, want an input error", c.delta, c.beta, err)
		}
		if _, err := NewTTUCB(st, c.delta, c.beta); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("tt-ucb delta %v beta %v: err %v, want an input error", c.delta, c.beta, err)
		}
	}
	p, _ := NewAdaPTT(st, b, 0.1, 0.5, ThresholdExperiments)
	if err := p.Update(bandit.Feedback{Arm: 0, Count: 1, Sum: math.NaN()}); err == nil {
		t.Error("a NaN reward was accepted")
	}
	if err := p.Update(bandit.Feedback{Arm: 1, Count: 1, Sum: 1}); err == nil {
		t.Error("feedback for another arm than the plan's was accepted")
	}
}

// TestAdaPTTRangeInvariance: rewards in a declared range [lo, hi] are
// normalised to [0,1], the Laplace scale is (hi - lo)/(eps n) in the
// declared units: on [-1, 3] with rewards 4x - 1 AdaP-TT makes the same
// pulls and decision as on [0,1] with rewards x, with the same coins and
// noise stream.
func TestAdaPTTRangeInvariance(t *testing.T) {
	b, _ := privacy.NewPure(0.5)
	wide, _ := mechanism.NewBounds(-1, 3)
	means := []float64{0.8, 0.5, 0.4}
	var arms [2][]int
	var taus [2]int64
	for i, bounds := range []mechanism.Bounds{mechanism.Unit, wide} {
		st := bandit.Setting{Arms: 3, Bounds: bounds, Rand: noise.Stream(4), Noise: noise.NewFast(8)}
		p, err := NewAdaPTT(st, b, 0.05, 0.5, ThresholdTheory)
		if err != nil {
			t.Fatal(err)
		}
		r := noise.Stream(6)
		for range 200000 {
			if _, _, ok := p.Decision(); ok {
				break
			}
			pl := p.Next()
			x, _ := noise.Binomial(r, 1, means[pl.Arm])
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: bounds.Lo + bounds.Width()*float64(x)}); err != nil {
				t.Fatal(err)
			}
			arms[i] = append(arms[i], pl.Arm)
		}
		_, taus[i], _ = p.Decision()
	}
	if taus[0] == 0 || taus[0] != taus[1] || !slices.Equal(arms[0], arms[1]) {
		t.Errorf("stopping times %v; pulls equal: %v", taus, slices.Equal(arms[0], arms[1]))
	}
}
