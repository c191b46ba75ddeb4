package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Drifting is a K-armed instance whose means change with time: piecewise
// stationary (the means jump at given steps, Garivier and Moulines'
// switching bandit) or slowly drifting (linearly or sinusoidally). Its
// rewards are Bernoulli, or Gaussian clipped to a declared range, drawn
// at each step from the means of that step.
//
// The simulator plays it step by step (Sample): it is not a stack of
// rewards. Means, Stream and Draw, which the Instance interface requires,
// describe the means of step 0 only.
type Drifting struct {
	spec    string
	k       int
	gauss   bool
	sigma   float64
	bounds  mechanism.Bounds
	mu      func(t int64, dst []float64) // the raw means at step t
	changes []int64                      // the breakpoints of a piecewise instance
}

// MeansAt returns the arms' means (of the observed, clipped rewards) at
// step t, counted from 0.
func (d *Drifting) MeansAt(t int64) []float64 {
	m := make([]float64, d.k)
	d.mu(t, m)
	if d.gauss {
		for a, mu := range m {
			m[a] = gaussianLaw{iid{d.bounds}, mu, d.sigma}.mean()
		}
	}
	return m
}

// Breakpoints returns the steps at which a piecewise-stationary
// instance's means change (nil for a slow drift, which changes at every
// step).
func (d *Drifting) Breakpoints() []int64 { return slices.Clone(d.changes) }

// Sample draws arm's reward at step t from r, using exactly one variate
// of r whatever the arm and the step (a uniform for Bernoulli arms, a
// standard normal for Gaussian ones): the policies of a run that share r's
// seed see the same variates step by step (common random numbers), and a
// run is deterministic under its seed.
func (d *Drifting) Sample(r *rand.Rand, arm int, t int64) float64 {
	m := make([]float64, d.k)
	d.mu(t, m)
	if d.gauss {
		return min(max(m[arm]+d.sigma*r.NormFloat64(), d.bounds.Lo), d.bounds.Hi)
	}
	if r.Float64() < m[arm] {
		return 1
	}
	return 0
}

// Arms returns K.
func (d *Drifting) Arms() int { return d.k }

// Means returns the means at step 0.
func (d *Drifting) Means() []float64 { return d.MeansAt(0) }

// Bounds returns the rewards' range.
func (d *Drifting) Bounds() mechanism.Bounds { return d.bounds }

// Stream returns the stack of rewards of the means at step 0 (see
// Drifting: the simulator does not use it).
func (d *Drifting) Stream(seed, run uint64, arm int, capacity int64) *Stream {
	return d.at0().Stream(seed, run, arm, capacity)
}

// Draw draws a reward of the means at step 0 (see Drifting).
func (d *Drifting) Draw(r *rand.Rand, arm int) float64 { return d.Sample(r, arm, 0) }

// String returns the spec string.
func (d *Drifting) String() string { return d.spec }

// at0 is the stationary instance of the means at step 0.
func (d *Drifting) at0() Instance {
	m := make([]float64, d.k)
	d.mu(0, m)
	if d.gauss {
		return &Gaussian{Mu: m, Sigma: d.sigma, Range: d.bounds}
	}
	return &Bernoulli{P: m}
}

// parseDrifting parses the drifting kinds (see Parse):
//
//	piecewise-bernoulli:M1,M2,.../M1',M2',...@T1/...     means M until step T1, then M', ...
//	piecewise-gaussian:SEGMENTS[:sigma=S][:lo=L][:hi=H]
//	drift-bernoulli:linear:FROM/TO@T   means from FROM at step 0 to TO at step T, linearly, then TO
//	drift-bernoulli:sine:MID/AMP@P     means MID + AMP sin(2 pi t/P)
//	drift-gaussian:linear|sine:...[:sigma=S][:lo=L][:hi=H]
func parseDrifting(spec string) (*Drifting, error) {
	fields := strings.Split(spec, ":")
	kind := fields[0]
	d := &Drifting{spec: spec, bounds: mechanism.Unit, sigma: 1}
	d.gauss = strings.HasSuffix(kind, "-gaussian")
	body, opts := fields[1:], []string(nil)
	shape := "piecewise"
	if strings.HasPrefix(kind, "drift-") {
		if len(body) < 2 || body[0] != "linear" && body[0] != "sine" {
			return nil, errorf("spec %q needs the form %s:linear|sine:A/B@T", spec, kind)
		}
		shape, body = body[0], body[1:]
	}
	if len(body) < 1 {
		return nil, errorf("spec %q needs its means", spec)
	}
	body, opts = body[:1], body[1:]
	var keys []string
	if d.gauss {
		keys = []string{"sigma", "lo", "hi"}
	}
	o, err := parseOptions(spec, opts, keys...)
	if err != nil {
		return nil, err
	}
	if d.gauss {
		d.sigma = o.get("sigma", 1)
		d.bounds = mechanism.Bounds{Lo: o.get("lo", 0), Hi: o.get("hi", 1)}
		if !(d.sigma > 0) || math.IsInf(d.sigma, 0) {
			return nil, errorf("spec %q: sigma must be positive and finite, got %v", spec, d.sigma)
		}
		if err := d.bounds.Validate(); err != nil {
			return nil, err
		}
	}
	segs := strings.Split(body[0], "/")
	vecs := make([][]float64, len(segs))
	at := make([]int64, len(segs))
	for j, sg := range segs {
		v, t, hasT := strings.Cut(sg, "@")
		if hasT != (j > 0) {
			return nil, errorf("spec %q: segment %d needs %s", spec, j, map[bool]string{true: "its start, means@step", false: "no start (it starts at step 0)"}[j > 0])
		}
		if hasT {
			if at[j], err = strconv.ParseInt(t, 10, 64); err != nil || at[j] < 1 {
				return nil, errorf("spec %q: bad step %q", spec, t)
			}
		}
		if vecs[j], err = parseFloats(v); err != nil {
			return nil, errorf("spec %q: %w", spec, err)
		}
		if len(vecs[j]) != len(vecs[0]) {
			return nil, errorf("spec %q: segment %d has %d arms, the first %d", spec, j, len(vecs[j]), len(vecs[0]))
		}
	}
	d.k = len(vecs[0])
	if d.k < 2 {
		return nil, errorf("a bandit needs at least 2 arms, got %d", d.k)
	}
	if err := d.shape(spec, shape, vecs, at); err != nil {
		return nil, err
	}
	return d, d.check(spec, vecs, shape)
}

// shape sets the means' law of time.
func (d *Drifting) shape(spec, shape string, vecs [][]float64, at []int64) error {
	switch shape {
	case "piecewise":
		for j := 2; j < len(at); j++ {
			if at[j] <= at[j-1] {
				return errorf("spec %q: the breakpoints must increase, got %d after %d", spec, at[j], at[j-1])
			}
		}
		d.changes = at[1:]
		d.mu = func(t int64, dst []float64) {
			j, _ := slices.BinarySearch(d.changes, t+1) // the breakpoints <= t
			copy(dst, vecs[j])
		}
	default:
		if len(vecs) != 2 || at[1] < 1 {
			return errorf("spec %q: a %s drift needs two vectors, A/B@T", spec, shape)
		}
		a, b, T := vecs[0], vecs[1], float64(at[1])
		if shape == "linear" {
			d.mu = func(t int64, dst []float64) {
				f := min(float64(t)/T, 1)
				for i := range dst {
					dst[i] = a[i] + f*(b[i]-a[i])
				}
			}
			return nil
		}
		d.mu = func(t int64, dst []float64) {
			s := math.Sin(2 * math.Pi * float64(t%at[1]) / T)
			for i := range dst {
				dst[i] = a[i] + b[i]*s
			}
		}
	}
	return nil
}

// check refuses means that are not finite or, for Bernoulli arms, leave
// [0, 1] at some step (a drift's extremes: its end points, or MID ±
// AMP).
func (d *Drifting) check(spec string, vecs [][]float64, shape string) error {
	ext := vecs
	if shape == "sine" {
		lo, hi := slices.Clone(vecs[0]), slices.Clone(vecs[0])
		for i, a := range vecs[1] {
			lo[i], hi[i] = lo[i]-math.Abs(a), hi[i]+math.Abs(a)
		}
		ext = [][]float64{lo, hi}
	}
	for _, v := range ext {
		for a, m := range v {
			if math.IsNaN(m) || math.IsInf(m, 0) || !d.gauss && !(m >= 0 && m <= 1) {
				return errorf("spec %q: the mean of arm %d reaches %v (Bernoulli means lie in [0,1])", spec, a, m)
			}
		}
	}
	return nil
}

// options are a spec's key=number options.
type options map[string]float64

func (o options) get(k string, def float64) float64 {
	if v, ok := o[k]; ok {
		return v
	}
	return def
}

// parseOptions parses the key=number fields of spec, each key one of keys
// and given once.
func parseOptions(spec string, fields []string, keys ...string) (options, error) {
	o := options{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, errorf("spec %q: option %q needs the form key=number", spec, f)
		}
		if _, dup := o[k]; dup {
			return nil, errorf("spec %q: option %q is given twice", spec, k)
		}
		if !slices.Contains(keys, k) {
			return nil, errorf("spec %q: unknown option %q", spec, k)
		}
		o[k] = x
	}
	return o, nil
}

// DriftStream returns the random stream of a Drifting instance's rewards
// in run run of an experiment seeded by seed.
func DriftStream(seed, run uint64) *rand.Rand { return noise.Stream(seed, run, tagDrift) }

// tagDrift keys the drifting instances' reward streams.
const tagDrift = 1<<62 + 9
