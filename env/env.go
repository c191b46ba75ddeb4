// Package env holds bandit environments: K-armed stochastic instances with
// Bernoulli or clipped Gaussian rewards, parsed from spec strings such as
// "bernoulli:0.75,0.625,0.5,0.375,0.25".
//
// An instance gives each run and arm a Stream, the arm's reward sequence in
// the stack-of-rewards model (see Stream), and exposes its means and gaps so
// that the simulator can record pseudo-regret.
package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Instance is a K-armed stochastic bandit instance.
type Instance interface {
	// Arms returns K.
	Arms() int
	// Means returns the mean reward of each arm (of the observed, clipped
	// rewards).
	Means() []float64
	// Bounds returns the range every reward lies in.
	Bounds() mechanism.Bounds
	// Stream returns arm's reward sequence in run run of an experiment
	// seeded by seed, for indices [0, capacity).
	Stream(seed, run uint64, arm int, capacity int64) *Stream
	// Draw draws one reward of arm from r, independently of any stream:
	// the naive per-step reference path.
	Draw(r *rand.Rand, arm int) float64
	// String returns the instance's spec string.
	String() string
}

// Gaps returns the sub-optimality gaps max(means) - means[a].
func Gaps(means []float64) []float64 {
	best := slices.Max(means)
	g := make([]float64, len(means))
	for a, m := range means {
		g[a] = best - m
	}
	return g
}

// Bernoulli is a K-armed instance with Bernoulli rewards in {0, 1}.
type Bernoulli struct{ P []float64 }

// NewBernoulli returns the instance with the given means, each in [0,1].
func NewBernoulli(means []float64) (*Bernoulli, error) {
	if len(means) < 2 {
		return nil, errorf("a bandit needs at least 2 arms, got %d", len(means))
	}
	for a, p := range means {
		if !(p >= 0 && p <= 1) {
			return nil, errorf("Bernoulli mean of arm %d must lie in [0,1], got %v", a, p)
		}
	}
	return &Bernoulli{P: slices.Clone(means)}, nil
}

// Arms returns K.
func (b *Bernoulli) Arms() int { return len(b.P) }

// Means returns the arms' means.
func (b *Bernoulli) Means() []float64 { return slices.Clone(b.P) }

// Bounds returns [0, 1].
func (b *Bernoulli) Bounds() mechanism.Bounds { return mechanism.Unit }

// Stream returns the arm's reward sequence in the run.
func (b *Bernoulli) Stream(seed, run uint64, arm int, capacity int64) *Stream {
	return newStream(bernoulliLaw(b.P[arm]), capacity, seed, run, arm)
}

// Draw draws one reward. It is written so that the compiler sets the
// reward by a conditional move, not a branch, which a processor would
// mispredict at every other draw of a fair coin.
func (b *Bernoulli) Draw(r *rand.Rand, arm int) float64 {
	var x int
	if noise.Bernoulli(r, b.P[arm]) {
		x = 1
	}
	return float64(x)
}

// String returns the spec string.
func (b *Bernoulli) String() string { return "bernoulli:" + joinFloats(b.P) }

type bernoulliLaw float64

func (p bernoulliLaw) total(r *rand.Rand, n int64) float64 {
	k, _ := noise.Binomial(r, n, float64(p))
	return float64(k)
}

func (p bernoulliLaw) split(r *rand.Rand, half int64, s float64) float64 {
	k, _ := noise.Hypergeometric(r, 2*half, int64(s), half)
	return float64(k)
}

// leaf places s ones uniformly among the 64 positions (Floyd's sampling of
// an s-subset), which is the law of i.i.d. Bernoulli bits given their sum.
func (p bernoulliLaw) leaf(r *rand.Rand, s float64, v *[leafSize]float64) {
	k := int(s)
	flip := k > leafSize/2
	if flip {
		k = leafSize - k
	}
	var mask uint64
	for j := leafSize - k; j < leafSize; j++ {
		t := r.IntN(j + 1)
		if mask&(1<<t) != 0 {
			t = j
		}
		mask |= 1 << t
	}
	if flip {
		mask = ^mask
	}
	for i := range v {
		v[i] = float64((mask >> i) & 1)
	}
}

func (bernoulliLaw) observe(x float64) float64 { return x }
func (bernoulliLaw) exact() bool               { return true }

// Gaussian is a K-armed instance with rewards N(mu_a, Sigma^2) clipped to
// [Lo, Hi]. Range sums cost O(length): clipping leaves no shortcut. Clipping keeps rewards in a declared range, as private
// algorithms require; the instance's means are those of the clipped
// rewards, so pseudo-regret is exact.
type Gaussian struct {
	Mu    []float64
	Sigma float64
	Range mechanism.Bounds
}

// NewGaussian returns the instance; sigma must be positive and the range valid.
func NewGaussian(mu []float64, sigma float64, bounds mechanism.Bounds) (*Gaussian, error) {
	if len(mu) < 2 {
		return nil, errorf("a bandit needs at least 2 arms, got %d", len(mu))
	}
	for a, m := range mu {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, errorf("Gaussian mean of arm %d must be finite, got %v", a, m)
		}
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, errorf("sigma must be positive and finite, got %v", sigma)
	}
	if err := bounds.Validate(); err != nil {
		return nil, err
	}
	return &Gaussian{Mu: slices.Clone(mu), Sigma: sigma, Range: bounds}, nil
}

// Arms returns K.
func (g *Gaussian) Arms() int { return len(g.Mu) }

// Means returns the means of the clipped rewards:
// E[clip(X)] = lo Phi(a) + hi (1 - Phi(b)) + mu (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b))
// with a = (lo - mu)/sigma and b = (hi - mu)/sigma.
func (g *Gaussian) Means() []float64 {
	m := make([]float64, len(g.Mu))
	for i, mu := range g.Mu {
		m[i] = gaussianLaw{iid{g.Range}, mu, g.Sigma}.mean()
	}
	return m
}

// Bounds returns the clipping range.
func (g *Gaussian) Bounds() mechanism.Bounds { return g.Range }

// Stream returns the arm's reward sequence in the run.
func (g *Gaussian) Stream(seed, run uint64, arm int, capacity int64) *Stream {
	return newStream(gaussianLaw{iid{g.Range}, g.Mu[arm], g.Sigma}, capacity, seed, run, arm)
}

// Draw draws one clipped reward.
func (g *Gaussian) Draw(r *rand.Rand, arm int) float64 {
	return min(max(g.Mu[arm]+noise.Gaussian(r, g.Sigma), g.Range.Lo), g.Range.Hi)
}

// String returns the spec string.
func (g *Gaussian) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return "gaussian:" + joinFloats(g.Mu) + ":sigma=" + f(g.Sigma) + ":lo=" + f(g.Range.Lo) + ":hi=" + f(g.Range.Hi)
}

// iid is the part of a law of clipped rewards. Clipping makes range sums
// inexact, so every sum is taken reward by reward: the bridge degenerates
// to leaves of independent draws, seeded by (seed, run, arm, leaf), which
// keeps the stack of rewards common to all policies of a run.
type iid struct{ b mechanism.Bounds }

func (iid) total(*rand.Rand, int64) float64          { return 0 }
func (iid) split(*rand.Rand, int64, float64) float64 { return 0 }
func (i iid) observe(x float64) float64              { return min(max(x, i.b.Lo), i.b.Hi) }
func (iid) exact() bool                              { return false }

// gaussianLaw is N(mu, sigma^2) clipped.
type gaussianLaw struct {
	iid
	mu, sigma float64
}

func (g gaussianLaw) leaf(r *rand.Rand, _ float64, v *[leafSize]float64) {
	for i := range v {
		v[i] = g.mu + g.sigma*r.NormFloat64()
	}
}

func joinFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

// Parse builds an instance from its spec string. Random instances are
// drawn from the seed unless the spec names its own (instance=SEED), and
// are shared by all the runs of an experiment.
//
//	bernoulli:M1,M2,...                         Bernoulli arms with means Mi
//	gaussian:M1,M2,...[:sigma=S][:lo=L][:hi=H]  N(Mi, S^2) clipped to [L, H]
//	                                            (defaults S=1, L=0, H=1)
//	piecewise-bernoulli:M1,M2,.../M1',M2',...@T1/...
//	    means M until step T1 (from 0), then M' until the next
//	    breakpoint, ... (Drifting)
//	piecewise-gaussian:SEGMENTS[:sigma=S][:lo=L][:hi=H]
//	drift-bernoulli:linear:FROM/TO@T    means move linearly from FROM at
//	                                    step 0 to TO at step T, then stay
//	drift-bernoulli:sine:MID/AMP@P      means MID + AMP sin(2 pi t/P)
//	drift-gaussian:linear|sine:A/B@T[:sigma=S][:lo=L][:hi=H]
//	linear-sphere:k=K,d=D[,noise=gauss|bounded][,sigma=S][,instance=SEED][,lo=L,hi=H]
//	    K actions and theta* uniform on the unit sphere of R^D; reward
//	    <theta*, a> + noise of standard deviation S (default 1) clipped to
//	    [L, H] (default [-1, 1]); defaults K=10, D=3
//	linear-net:set=sphere|ball,d=D,zeta=Z[,...]
//	    the actions are a Z-net of the unit sphere or ball (design.Net)
func Parse(spec string, seed uint64) (Instance, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if kind == "linear-sphere" || kind == "linear-net" {
		return parseLinear(kind, rest, spec, seed)
	}
	if slices.Contains(DriftingKinds(), kind) {
		return parseDrifting(spec)
	}
	fields := strings.Split(spec, ":")
	if len(fields) < 2 {
		return nil, errorf("spec %q needs the form kind:means, e.g. bernoulli:0.75,0.5", spec)
	}
	means, err := parseFloats(fields[1])
	if err != nil {
		return nil, errorf("spec %q: %w", spec, err)
	}
	var keys []string
	if fields[0] == "gaussian" {
		keys = []string{"sigma", "lo", "hi"}
	}
	opts, err := parseOptions(spec, fields[2:], keys...)
	if err != nil {
		return nil, err
	}
	switch fields[0] {
	case "bernoulli":
		return NewBernoulli(means)
	case "gaussian":
		return NewGaussian(means, opts.get("sigma", 1), mechanism.Bounds{Lo: opts.get("lo", 0), Hi: opts.get("hi", 1)})
	}
	return nil, errorf("unknown environment %q (known: bernoulli, gaussian, %s, linear-sphere, linear-net)", fields[0], strings.Join(DriftingKinds(), ", "))
}

// DriftingKinds are the kinds of Drifting instances.
func DriftingKinds() []string {
	return []string{"piecewise-bernoulli", "piecewise-gaussian", "drift-bernoulli", "drift-gaussian"}
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, x)
	}
	return out, nil
}
