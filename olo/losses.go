package olo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/noise"
)

// Losses is an oblivious sequence of loss vectors in [0,1]^N, fixed by
// the experiment seed and the run:
//
//	experts-iid:n=N      expert i loses 1 with probability mu_i, the mu_i
//	                     drawn once, uniform in [0.2, 0.8], from the
//	                     instance seed (default: the experiment seed)
//	experts-switching:n=N,period=P
//	                     the best expert switches every P steps: expert
//	                     (t/P) mod N loses 0, the others 1
//	ball:d=D             decision set: the unit ball of R^D; loss
//	                     l_t = v/||v||_2, v = theta + N(0, I), theta on the
//	                     unit sphere drawn once from the instance seed
//	cube:d=D             decision set: the cube [-1, 1]^D; loss
//	                     l_t = v/||v||_1 (in the L1 ball, the dual of the
//	                     cube's norm), v as above
type Losses struct {
	N      int
	Kind   string
	Mu     []float64
	Theta  []float64
	Period int64
	spec   string
}

// Set returns the decision set: "simplex" (experts), "ball" or "cube".
func (l *Losses) Set() string {
	switch l.Kind {
	case "ball", "cube":
		return l.Kind
	}
	return "simplex"
}

// Best returns min over the decision set of <cum, x>: the loss of the best
// fixed action in hindsight for cumulative losses cum.
func (l *Losses) Best(cum []float64) float64 {
	switch l.Set() {
	case "ball":
		s := 0.0
		for _, v := range cum {
			s += v * v
		}
		return -math.Sqrt(s)
	case "cube":
		s := 0.0
		for _, v := range cum {
			s += math.Abs(v)
		}
		return -s
	}
	best := math.Inf(1)
	for _, v := range cum {
		best = math.Min(best, v)
	}
	return best
}

// IsLosses reports whether spec names a loss sequence.
func IsLosses(spec string) bool {
	kind, _, _ := strings.Cut(spec, ":")
	return kind == "experts-iid" || kind == "experts-switching" || kind == "ball" || kind == "cube"
}

// String returns the canonical spec.
func (l *Losses) String() string { return l.spec }

// ParseLosses builds a loss sequence from its spec.
func ParseLosses(spec string, seed uint64) (*Losses, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if !IsLosses(kind) {
		return nil, inputf("unknown loss sequence %q (known: experts-iid, experts-switching, ball, cube)", kind)
	}
	kv := map[string]string{"n": "10"}
	dimKey := "n"
	switch kind {
	case "experts-switching":
		kv["period"] = "1000"
	case "ball", "cube":
		kv = map[string]string{"d": "5", "instance": strconv.FormatUint(seed, 10)}
		dimKey = "d"
	default:
		kv["instance"] = strconv.FormatUint(seed, 10)
	}
	if rest != "" {
		seen := map[string]bool{}
		for _, f := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(f, "=")
			if _, known := kv[k]; !ok || !known {
				return nil, inputf("spec %q: bad or unknown key %q", spec, f)
			}
			if seen[k] {
				return nil, inputf("spec %q: key %q is given twice", spec, k)
			}
			seen[k] = true
			kv[k] = v
		}
	}
	n, err := strconv.Atoi(kv[dimKey])
	if err != nil || n < 2 || n > 100000 {
		return nil, inputf("spec %q: %s=%q must be an integer in [2, 100000]", spec, dimKey, kv[dimKey])
	}
	l := &Losses{N: n, Kind: kind}
	if kind == "experts-switching" {
		if l.Period, err = strconv.ParseInt(kv["period"], 10, 64); err != nil || l.Period < 1 {
			return nil, inputf("spec %q: period=%q must be a positive integer", spec, kv["period"])
		}
		l.spec = fmt.Sprintf("%s:n=%d,period=%d", kind, n, l.Period)
		return l, nil
	}
	inst, err := strconv.ParseUint(kv["instance"], 10, 64)
	if err != nil {
		return nil, inputf("spec %q: instance=%q is not a seed", spec, kv["instance"])
	}
	r := noise.Stream(inst, 1<<62+11)
	if kind == "ball" || kind == "cube" {
		l.Theta = make([]float64, n)
		s := 0.0
		for i := range l.Theta {
			l.Theta[i] = r.NormFloat64()
			s += l.Theta[i] * l.Theta[i]
		}
		for i := range l.Theta {
			l.Theta[i] /= math.Sqrt(s)
		}
		l.spec = fmt.Sprintf("%s:d=%d,instance=%d", kind, n, inst)
		return l, nil
	}
	for range n {
		l.Mu = append(l.Mu, 0.2+0.6*r.Float64())
	}
	l.spec = fmt.Sprintf("%s:instance=%d,n=%d", kind, inst, n)
	return l, nil
}

// LossRun is one run's loss sequence: every learner of a run sees the
// same losses.
type LossRun struct {
	l   *Losses
	src *rand.PCG
	r   *rand.Rand // on src
	thr []uint64   // experts-iid: expert i loses when 53 random bits are below thr[i]
	t   int64
	buf []float64
}

// NewRun returns the losses of run run of an experiment seeded by seed.
func (l *Losses) NewRun(seed, run uint64) *LossRun {
	src := noise.Reseed(rand.NewPCG(0, 0), seed, run, 1<<62+12)
	r := &LossRun{l: l, src: src, r: rand.New(src), buf: make([]float64, l.N)}
	for _, m := range l.Mu {
		// u/2^53 < m exactly when u < ceil(m 2^53), for an integer u.
		r.thr = append(r.thr, uint64(math.Ceil(m*(1<<53))))
	}
	return r
}

// Next returns the next loss vector (the slice is reused).
func (r *LossRun) Next() []float64 {
	l := r.l
	switch l.Kind {
	case "ball", "cube":
		norm := 0.0
		for i, th := range l.Theta {
			r.buf[i] = th + r.r.NormFloat64()
			if l.Kind == "ball" {
				norm += r.buf[i] * r.buf[i]
			} else {
				norm += math.Abs(r.buf[i])
			}
		}
		if l.Kind == "ball" {
			norm = math.Sqrt(norm)
		}
		for i := range r.buf {
			r.buf[i] /= norm
		}
	case "experts-switching":
		good := int((r.t / l.Period) % int64(l.N))
		for i := range r.buf {
			r.buf[i] = 1
		}
		r.buf[good] = 0
	default:
		// Bernoulli(mu_i) from the low 53 bits of a draw, as
		// rand.Float64() < mu_i would, without a branch: (u - thr) >> 63
		// is 1 exactly when u < thr.
		for i, thr := range r.thr {
			u := r.src.Uint64() & (1<<53 - 1)
			r.buf[i] = float64((u - thr) >> 63)
		}
	}
	r.t++
	return r.buf
}
