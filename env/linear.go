package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/design"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Linear is a stochastic linear bandit with a finite action set (seed 001,
// Section IV-A): the reward of action a is <theta*, a> + eta, with eta
// Gaussian N(0, sigma^2) or bounded (uniform on [-sqrt(3) sigma,
// sqrt(3) sigma], also of variance sigma^2), clipped to the declared range
// (default [-1, 1], the range of the privacy proofs of seed 001). Its
// means are those of the clipped rewards, so pseudo-regret is exact.
// Action norms must be at most 1, as the proofs assume.
type Linear struct {
	Acts    [][]float64
	Theta   []float64
	Sigma   float64
	Bounded bool
	Range   mechanism.Bounds
	spec    string
}

// NewLinear validates and returns the instance.
func NewLinear(actions [][]float64, theta []float64, sigma float64, bounded bool, r mechanism.Bounds, spec string) (*Linear, error) {
	if len(actions) < 2 {
		return nil, errorf("a linear bandit needs at least 2 actions, got %d", len(actions))
	}
	if err := mechanism.CheckActions(actions, len(theta)); err != nil {
		return nil, err
	}
	for _, x := range theta {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errorf("theta has a non-finite coordinate")
		}
	}
	if !(sigma >= 0) || math.IsInf(sigma, 0) {
		return nil, errorf("sigma must be finite and non-negative, got %v", sigma)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &Linear{Acts: actions, Theta: theta, Sigma: sigma, Bounded: bounded, Range: r, spec: spec}, nil
}

// Actions returns the action vectors.
func (l *Linear) Actions() [][]float64 { return l.Acts }

// Arms returns the number of actions.
func (l *Linear) Arms() int { return len(l.Acts) }

// Bounds returns the clipping range.
func (l *Linear) Bounds() mechanism.Bounds { return l.Range }

// String returns the spec string.
func (l *Linear) String() string { return l.spec }

func (l *Linear) mu(a int) float64 {
	s := 0.0
	for i, x := range l.Acts[a] {
		s += x * l.Theta[i]
	}
	return s
}

// Means returns the means of the clipped rewards.
func (l *Linear) Means() []float64 {
	m := make([]float64, len(l.Acts))
	for a := range m {
		m[a] = l.law(a).mean()
	}
	return m
}

type meanLaw interface {
	law
	mean() float64
}

func (l *Linear) law(a int) meanLaw {
	if l.Bounded {
		return uniformLaw{iid{l.Range}, l.mu(a), math.Sqrt(3) * l.Sigma}
	}
	return gaussianLaw{iid{l.Range}, l.mu(a), l.Sigma}
}

// Stream returns the action's reward sequence in the run.
func (l *Linear) Stream(seed, run uint64, arm int, capacity int64) *Stream {
	return newStream(l.law(arm), capacity, seed, run, arm)
}

// Draw draws one reward.
func (l *Linear) Draw(r *rand.Rand, arm int) float64 {
	var v [leafSize]float64
	law := l.law(arm)
	law.leaf(r, law.total(r, leafSize), &v)
	return law.observe(v[0])
}

// uniformLaw is mu + U(-b, b) clipped, drawn block by block (iid).
type uniformLaw struct {
	iid
	mu, b float64
}

func (u uniformLaw) leaf(r *rand.Rand, _ float64, v *[leafSize]float64) {
	for i := range v {
		v[i] = u.mu + u.b*(2*r.Float64()-1)
	}
}

// mean is (1/2b) times the integral of clip(x) over [mu-b, mu+b].
func (u uniformLaw) mean() float64 {
	if u.b == 0 {
		return u.observe(u.mu)
	}
	a, c := u.mu-u.b, u.mu+u.b
	length := func(x, y float64) float64 { return math.Max(0, y-x) }
	in := length(math.Max(a, u.iid.b.Lo), math.Min(c, u.iid.b.Hi))
	lo, hi := math.Max(a, u.iid.b.Lo), math.Min(c, u.iid.b.Hi)
	s := u.iid.b.Lo*length(a, math.Min(c, u.iid.b.Lo)) + u.iid.b.Hi*length(math.Max(a, u.iid.b.Hi), c)
	if in > 0 {
		s += (hi*hi - lo*lo) / 2
	}
	return s / (2 * u.b)
}

// mean of the clipped Gaussian.
func (g gaussianLaw) mean() float64 {
	if g.sigma == 0 {
		return g.observe(g.mu)
	}
	Phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	a, b := (g.b.Lo-g.mu)/g.sigma, (g.b.Hi-g.mu)/g.sigma
	return g.b.Lo*Phi(a) + g.b.Hi*(1-Phi(b)) + g.mu*(Phi(b)-Phi(a)) + g.sigma*(phi(a)-phi(b))
}

// unitVector draws a point uniformly on the unit sphere of R^d.
func unitVector(r *rand.Rand, d int) []float64 {
	for {
		v := make([]float64, d)
		n := 0.0
		for i := range v {
			v[i] = r.NormFloat64()
			n += v[i] * v[i]
		}
		if n > 0 {
			for i := range v {
				v[i] /= math.Sqrt(n)
			}
			mechanism.IntoUnitBall(v) // rounding may leave it an ulp outside
			return v
		}
	}
}

// tagInstance separates instance draws from reward streams.
const tagInstance = 1<<62 + 7

// keys parses "k=10,d=3,..." into a map, allowing only the given keys.
func keys(spec, s string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, errorf("spec %q: %q needs the form key=value", spec, f)
		}
		if !slices.Contains(allowed, k) {
			return nil, errorf("spec %q: unknown key %q (known: %s)", spec, k, strings.Join(allowed, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, errorf("spec %q: key %q is given twice", spec, k)
		}
		out[k] = v
	}
	return out, nil
}

// linearCommon reads the noise, range and instance keys shared by the
// linear specs.
func linearCommon(spec string, kv map[string]string, seed uint64) (sigma float64, bounded bool, r mechanism.Bounds, inst uint64, err error) {
	num := func(k string, d float64) float64 {
		v, ok := kv[k]
		if !ok || err != nil {
			return d
		}
		x, e := strconv.ParseFloat(v, 64)
		if e != nil {
			err = errorf("spec %q: %s=%q is not a number", spec, k, v)
		}
		return x
	}
	sigma = num("sigma", 1)
	r = mechanism.Bounds{Lo: num("lo", -1), Hi: num("hi", 1)}
	inst = seed
	if v, ok := kv["instance"]; ok {
		if inst, err = strconv.ParseUint(v, 10, 64); err != nil {
			err = errorf("spec %q: instance=%q is not a seed", spec, v)
		}
	}
	switch kv["noise"] {
	case "", "gauss":
	case "bounded":
		bounded = true
	default:
		err = errorf("spec %q: noise must be gauss or bounded, got %q", spec, kv["noise"])
	}
	if err == nil && (!(sigma >= 0) || math.IsInf(sigma, 0)) {
		err = errorf("sigma must be finite and non-negative, got %v", sigma)
	}
	if err == nil {
		err = r.Validate()
	}
	return
}

// parseLinear builds linear-sphere and linear-net instances.
func parseLinear(kind, rest, spec string, seed uint64) (Instance, error) {
	common := []string{"noise", "sigma", "instance", "lo", "hi", "corrupt", "adversary"}
	var kv map[string]string
	var err error
	if kind == "linear-sphere" {
		kv, err = keys(spec, rest, append(common, "k", "d")...)
	} else {
		kv, err = keys(spec, rest, append(common, "set", "d", "zeta")...)
	}
	if err != nil {
		return nil, err
	}
	sigma, bounded, rg, inst, err := linearCommon(spec, kv, seed)
	if err != nil {
		return nil, err
	}
	atoi := func(k string, d int) (int, error) {
		v, ok := kv[k]
		if !ok {
			return d, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return 0, errorf("spec %q: %s=%q must be an integer in [1, 100000]", spec, k, v)
		}
		return n, nil
	}
	d, err := atoi("d", 3)
	if err != nil {
		return nil, err
	}
	r := noise.Stream(inst, tagInstance)
	var acts [][]float64
	if kind == "linear-sphere" {
		k, err := atoi("k", 10)
		if err != nil {
			return nil, err
		}
		if err := checkCells(spec, k, d); err != nil {
			return nil, err
		}
		for range k {
			acts = append(acts, unitVector(r, d))
		}
	} else {
		zeta := 0.1
		if v, ok := kv["zeta"]; ok {
			if zeta, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, errorf("spec %q: zeta=%q is not a number", spec, v)
			}
		}
		set := kv["set"]
		if set == "" {
			set = "sphere"
		}
		if acts, err = design.Net(set, d, zeta); err != nil {
			return nil, err
		}
	}
	alpha, adversary, err := corruption(spec, kv)
	if err != nil {
		return nil, err
	}
	l, err := NewLinear(acts, unitVector(r, d), sigma, bounded, rg, canonical(kind, kv, inst))
	if err != nil || adversary == "" {
		return l, err
	}
	return NewCorrupted(l, alpha, adversary, l.spec)
}

// MaxCells bounds the coordinates of an action set (K actions of
// dimension d, K d <= MaxCells: 1 GiB of float64), checked before any
// allocation.
const MaxCells = 1 << 27

// checkCells reports an error if k actions of dimension d exceed MaxCells.
func checkCells(spec string, k, d int) error {
	if int64(k)*int64(d) > MaxCells {
		return errorf("spec %q: %d actions of dimension %d are %d coordinates (%.1f GiB), above the limit of %d (1 GiB)",
			spec, k, d, int64(k)*int64(d), float64(int64(k)*int64(d))*8/(1<<30), MaxCells)
	}
	return nil
}

// canonical writes a linear spec with its keys sorted and the instance seed.
func canonical(kind string, kv map[string]string, inst uint64) string {
	kv["instance"] = strconv.FormatUint(inst, 10)
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range kv {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+"="+kv[k])
	}
	return kind + ":" + strings.Join(parts, ",")
}
