package mab

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// countingNoise counts Gaussian draws and adds a fixed offset. It also
// counts the Gaussian calibrations made on it: each asks a source whether
// it is discrete (mechanism.CalibrateGaussian), and it is not.
type countingNoise struct {
	draws        int
	offset       float64
	sigmas       []float64
	calibrations int
}

func (c *countingNoise) Discrete() bool { c.calibrations++; return false }

func (c *countingNoise) AddGaussian(x, sigma, _ float64) (float64, error) {
	c.draws++
	c.sigmas = append(c.sigmas, sigma)
	return x + c.offset*sigma, nil
}
func (c *countingNoise) AddLaplace(x, b, _ float64) (float64, error) { c.draws++; return x, nil }

func setting(k int, nz noise.Noise) bandit.Setting {
	return bandit.Setting{Arms: k, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: nz}
}

// play runs the policy for T steps on fixed Bernoulli means, batched.
func play(t *testing.T, p bandit.Policy, means []float64, T int64, seed uint64) []int64 {
	r := noise.Stream(seed)
	counts := make([]int64, len(means))
	for step := int64(0); step < T; {
		pl := p.Next()
		n := min(pl.Count, T-step)
		k, _ := noise.Binomial(r, n, means[pl.Arm])
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: float64(k)}); err != nil {
			t.Fatal(err)
		}
		counts[pl.Arm] += n
		step += n
	}
	return counts
}

// drawsOncePerEpisode plays the doubling policy p for 10^5 steps on three
// arms and checks that *draws, its noise source's count of draws, grew
// by one per released episode (the last may be cut by the horizon,
// unreleased).
func drawsOncePerEpisode(t *testing.T, p interface {
	bandit.Policy
	Episodes() int64
}, draws *int) {
	t.Helper()
	play(t, p, []float64{0.9, 0.5, 0.4}, 100000, 2)
	if e := int(p.Episodes()); *draws != e && *draws != e-1 {
		t.Errorf("%d noise draws for %d episodes", *draws, e)
	}
}

// TestAdaCUCBNoiseOncePerEpisode is the trap of docs/privacy.md ("Noise once per block"): the
// noisy mean of an (arm, episode) is drawn once, when the episode ends.
func TestAdaCUCBNoiseOncePerEpisode(t *testing.T) {
	nz := &countingNoise{}
	b, _ := privacy.NewZCDP(0.1)
	p, err := NewAdaCUCB(setting(3, nz), b, 4)
	if err != nil {
		t.Fatal(err)
	}
	drawsOncePerEpisode(t, p, &nz.draws)
	// Evaluating indices draws nothing.
	before := nz.draws
	for range 10 {
		p.Next()
	}
	if nz.draws != before {
		t.Error("Next drew noise")
	}
}

// TestAdaCUCBCalibratesOnce: the Gaussian mechanism is calibrated to
// the budget once per policy (for an (eps,delta) budget, the analytic
// Gaussian's bisection), not again at every episode's release: each
// release's sigma is the calibration's at the episode's sensitivity.
func TestAdaCUCBCalibratesOnce(t *testing.T) {
	nz := &countingNoise{}
	b, _ := privacy.NewApprox(0.9, 1e-6)
	p, err := NewAdaCUCB(setting(3, nz), b, 4)
	if err != nil {
		t.Fatal(err)
	}
	play(t, p, []float64{0.9, 0.5, 0.4}, 100000, 2)
	if p.Episodes() < 20 || nz.calibrations != 1 {
		t.Errorf("%d calibrations for %d episodes, want 1", nz.calibrations, p.Episodes())
	}
}

// TestAdaCUCBDoubling is the second and third traps: the last-episode
// sample count is 1 after the initial pull, and an episode doubles the
// arm's count; each release has sensitivity 1/n for that n.
func TestAdaCUCBDoubling(t *testing.T) {
	nz := &countingNoise{}
	rho := 0.5
	b, _ := privacy.NewZCDP(rho)
	p, _ := NewAdaCUCB(setting(2, nz), b, 1)
	var plans []bandit.Plan
	for range 12 {
		pl := p.Next()
		plans = append(plans, pl)
		// Feed one pull at a time, as a server would.
		for range pl.Count {
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Arm 0 always has reward 1, arm 1 too: counts must double per arm.
	seen := map[int]int64{}
	for i, pl := range plans {
		want := max(seen[pl.Arm], 1)
		if pl.Count != want {
			t.Fatalf("plan %d = %+v, want count %d (double the arm's count)", i, pl, want)
		}
		seen[pl.Arm] += pl.Count
		if s, want := nz.sigmas[i], math.Sqrt(1/(2*rho*float64(pl.Count*pl.Count))); math.Abs(s-want) > 1e-12*want {
			t.Errorf("plan %d: sigma %v, want 1/sqrt(2 rho n^2) = %v", i, s, want)
		}
	}
	if p.last[0] != plans[len(plans)-1].Count && p.last[1] != plans[len(plans)-1].Count {
		t.Error("last-episode count not recorded")
	}
}

// randomState gives each of the policy's arms a random count, last-episode
// size, released mean and noise scale (scale(n)); it returns t.
func randomState(p *doubling, r *rand.Rand, scale func(n float64) float64) int64 {
	p.t = 0
	for a := range p.count {
		p.count[a] = 1 + r.Int64N(1000)
		p.last[a] = max(p.count[a]/2, 1)
		p.mean[a] = r.Float64()
		p.scale[a] = scale(float64(p.last[a]))
		p.t += p.count[a]
	}
	return p.t
}

// TestAdaCUCBIndexEq14 compares the arm chosen with the argmax of Eq. (14)
// evaluated from the paper's formula for rewards in [0,1]:
// mu~ + sqrt((1/(2n) + 1/(rho n^2)) beta log t_l).
func TestAdaCUCBIndexEq14(t *testing.T) {
	r := noise.Stream(3)
	for trial := range 2000 {
		rho := math.Pow(10, -3+5*r.Float64())
		beta := 0.5 + 4*r.Float64()
		b, _ := privacy.NewZCDP(rho)
		p, _ := NewAdaCUCB(setting(4, noise.Fast{R: r}), b, beta)
		tt := randomState(p.doubling, r, func(n float64) float64 { return math.Sqrt(1 / (2 * rho * n * n)) })
		want, best := 0, math.Inf(-1)
		for a := range 4 {
			n := float64(p.last[a])
			idx := p.mean[a] + math.Sqrt((1/(2*n)+1/(rho*n*n))*beta*math.Log(float64(tt+1)))
			if idx > best {
				want, best = a, idx
			}
		}
		if got := p.Next(); got.Arm != want || got.Count != p.count[want] {
			t.Fatalf("trial %d: plan %+v, Eq. (14) chooses arm %d for %d steps", trial, got, want, p.count[want])
		}
	}
}

// TestAdaCUCBReleasedMeanLaw checks the released mean of a one-sample
// episode against mean + N(0, 1/(2 rho)) (Appendix D of seed 001, n = 1),
// and for (eps,delta)-DP against the analytic Gaussian's variance (Balle
// and Wang 2018; package privacy), below Theorem 18's 2 ln(1.25/delta)/eps^2.
func TestAdaCUCBReleasedMeanLaw(t *testing.T) {
	// The variance for an (eps,delta) budget: the analytic Gaussian,
	// checked to meet delta exactly and to lie below the classical one.
	analyticVar := func(t *testing.T, b privacy.Budget) float64 {
		f, _ := privacy.GaussianFactor(b)
		if privacy.AnalyticGaussianDelta(b.Eps, math.Sqrt(f)) > b.Delta || f >= 2*math.Log(1.25/b.Delta)/(b.Eps*b.Eps) {
			t.Fatalf("factor %v for %v", f, b)
		}
		return f
	}
	zc, _ := privacy.NewZCDP(0.2)
	ap, _ := privacy.NewApprox(0.5, 1e-4)
	for _, c := range []struct {
		b    privacy.Budget
		var_ float64
	}{{zc, 1 / (2 * 0.2)}, {ap, analyticVar(t, ap)}} {
		r := noise.Stream(4)
		x := make([]float64, 5000)
		for i := range x {
			p, _ := NewAdaCUCB(setting(2, noise.Fast{R: r}), c.b, 1)
			p.Next()
			if err := p.Update(bandit.Feedback{Arm: 0, Count: 1, Sum: 0.25}); err != nil {
				t.Fatal(err)
			}
			x[i] = p.mean[0] - 0.25
		}
		sd := math.Sqrt(c.var_)
		if d, pv := stattest.KSOne(x, func(v float64) float64 { return 0.5 * math.Erfc(-v/(sd*math.Sqrt2)) }); pv < 1e-3 {
			t.Errorf("%v: released mean noise not N(0, %v): D=%v p=%v", c.b, c.var_, d, pv)
		}
	}
}

func TestAdaCUCBRejectsBadInput(t *testing.T) {
	b, _ := privacy.NewZCDP(1)
	p, _ := NewAdaCUCB(setting(2, &countingNoise{}), b, 1)
	pl := p.Next()
	for _, f := range []bandit.Feedback{
		{Arm: 1 - pl.Arm, Count: 1, Sum: 0},
		{Arm: pl.Arm, Count: 2, Sum: 1},
		{Arm: pl.Arm, Count: 1, Sum: math.NaN()},
		{Arm: pl.Arm, Count: 1, Sum: math.Inf(-1)},
	} {
		if err := p.Update(f); err == nil {
			t.Errorf("Update(%+v) accepted", f)
		}
	}
	// A single out-of-range reward is clipped to the declared range.
	if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: 7}); err != nil || p.mean[pl.Arm] != 1 {
		t.Errorf("clipping: err %v, mean %v", err, p.mean[pl.Arm])
	}
	for _, bad := range []struct {
		b    privacy.Budget
		beta float64
		want string
	}{
		{privacy.Budget{Notion: privacy.Pure, Eps: 1}, 1, "pure"},
		{privacy.Budget{Notion: privacy.ZCDP, Rho: -1}, 1, "rho"},
		{b, math.NaN(), "beta"},
	} {
		if _, err := NewAdaCUCB(setting(2, &countingNoise{}), bad.b, bad.beta); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewAdaCUCB(%v, %v): %v, want an error naming %q", bad.b, bad.beta, err, bad.want)
		}
	}
	if _, err := NewAdaCUCB(setting(1, nil), privacy.None(), 1); err == nil {
		t.Error("one arm accepted")
	}
}

// TestUCB1PullBound checks Theorem 1 of Auer et al. (2002): the expected
// number of pulls of a suboptimal arm is at most 8 ln T/Delta^2 + 1 + pi^2/3.
func TestUCB1PullBound(t *testing.T) {
	means := []float64{0.7, 0.5}
	const T, runs = 20000, 100
	var pulls float64
	for run := range uint64(runs) {
		u, _ := NewUCB1(setting(2, nil))
		pulls += float64(play(t, u, means, T, 100+run)[1])
	}
	pulls /= runs
	bound := 8*math.Log(T)/(0.2*0.2) + 1 + math.Pi*math.Pi/3
	if pulls > bound {
		t.Errorf("suboptimal arm pulled %v times on average, Auer bound %v", pulls, bound)
	}
	// And UCB1 learns: far fewer pulls than uniform play.
	if pulls > T/4 {
		t.Errorf("suboptimal arm pulled %v of %d times", pulls, T)
	}
	u, _ := NewUCB1(setting(2, nil))
	if err := u.Update(bandit.Feedback{Arm: 5, Count: 1}); err == nil {
		t.Error("arm 5 of 2 accepted")
	}
}

// TestUnusableNoiseRefused: a private policy built on a noise source that
// cannot draw (nil, a Fast without its stream) is refused with
// noise.ErrNoSource, not a panic at its first release.
func TestUnusableNoiseRefused(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	pure, _ := privacy.NewPure(1)
	for _, nz := range []noise.Noise{nil, noise.Fast{}} {
		s := bandit.Setting{Arms: 3, Horizon: 100, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: nz}
		_, e1 := NewAdaCUCB(s, z, 1)
		_, e2 := NewAdaPUCB(s, z, 1)
		_, e3 := NewDPSE(s, z, 0.05)
		_, e4 := NewNAS(pure, 0.1, 0.1, 1, false, nz)
		for i, err := range []error{e1, e2, e3, e4} {
			if !errors.Is(err, noise.ErrNoSource) {
				t.Errorf("policy %d on %#v: %v", i, nz, err)
			}
		}
	}
}
