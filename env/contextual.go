package env

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Contextual generates the decision sets of a linear contextual bandit
// (seed 001, Section VII-A): at each step K actions drawn from
// N((1/sqrt d) 1, I/10), so near the unit sphere; theta* uniform on the
// sphere, drawn once from the instance seed and shared by all runs; the
// reward of action a is <theta*, a> + eta with eta Gaussian or bounded
// (uniform of the same variance), clipped to the declared range (default
// [-1, 1]). About half of the drawn actions have norm above 1, which the
// privacy proof forbids: with Rescale (the default) they are divided by
// their norm (mechanism.IntoUnitBall, so that the exact check passes);
// without it they are passed on, and the policies reject them.
// The decision sets are public; only rewards are private (Remark 4).
//
// A sparse instance (sparse-gauss, seed 002) draws each action from
// N(0, Sigma) with the Toeplitz correlation Sigma_ij = Corr^|i-j| (an
// AR(1) recursion, O(d) per action), divided by its norm when above 1
// (always, in practice: the norm is about sqrt(d)); theta* has S0
// non-zero coordinates, at positions and signs drawn from the instance
// seed, each of magnitude 1/sqrt(S0) (so ||theta*|| = 1 and theta_min =
// 1/sqrt(S0)). Such contexts are symmetric and balanced (002's
// Assumptions 3 and 4) and their covariance restricted to any set of
// coordinates has its smallest eigenvalue at least (1 - Corr)/(1 + Corr)
// times its scale (Assumption 5).
type Contextual struct {
	K, D    int
	Theta   []float64
	Sigma   float64
	Bounded bool
	Range   mechanism.Bounds
	Rescale bool
	// Sparse marks a sparse-gauss instance, of correlation Corr.
	Sparse bool
	Corr   float64
	spec   string
}

// Support returns the indices of theta*'s non-zero coordinates.
func (c *Contextual) Support() []int {
	var s []int
	for i, x := range c.Theta {
		if x != 0 {
			s = append(s, i)
		}
	}
	return s
}

// Dim returns d.
func (c *Contextual) Dim() int { return c.D }

// Bounds returns the clipping range.
func (c *Contextual) Bounds() mechanism.Bounds { return c.Range }

// String returns the canonical spec, with its instance seed.
func (c *Contextual) String() string { return c.spec }

// ContextRun is one run's sequence of decision sets and reward noise. Runs
// built from the same (seed, run) give the same sequences, so every policy
// of a run faces the same decision sets and noise (common random numbers).
type ContextRun struct {
	c    *Contextual
	ctx  *rand.PCG
	nz   *rand.Rand
	buf  []float64 // the K actions, contiguous
	acts [][]float64
	vals []float64 // <theta*, a_k>, computed once per step: every policy of a run asks
	eta  float64
}

// NewRun returns the sequences of run run of an experiment seeded by seed
// (a *ContextRun).
func (c *Contextual) NewRun(seed, run uint64) Rounds {
	acts := make([][]float64, c.K)
	buf := make([]float64, c.K*c.D)
	for k := range acts {
		acts[k] = buf[k*c.D : (k+1)*c.D : (k+1)*c.D]
	}
	return &ContextRun{c: c, ctx: noise.Reseed(rand.NewPCG(0, 0), seed, run, tagInstance+1),
		nz: noise.Stream(seed, run, tagInstance+2), buf: buf, acts: acts, vals: make([]float64, c.K)}
}

// Next draws the next decision set (reusing the returned slices), the
// actions' values and the step's reward noise. The actions' coordinates
// come from the ziggurat sampler noise.Normals.
func (r *ContextRun) Next() [][]float64 {
	c := r.c
	m, s := 1/math.Sqrt(float64(c.D)), math.Sqrt(0.1)
	if c.Sparse {
		m, s = 0, 1
	}
	if c.Sparse {
		noise.Normals(r.ctx, r.buf)
		for _, a := range r.acts {
			ar1(a, c.Corr)
			for i, z := range a {
				a[i] = m + s*z
			}
		}
	} else {
		noise.NormalsAffine(r.ctx, r.buf, m, s) // the same values in one pass
	}
	if c.Rescale {
		mechanism.IntoUnitBallSet(r.acts)
	}
	values(r.vals, r.acts, c.Theta)
	if c.Bounded {
		r.eta = math.Sqrt(3) * c.Sigma * (2*r.nz.Float64() - 1)
	} else {
		r.eta = c.Sigma * r.nz.NormFloat64()
	}
	return r.acts
}

// values sets vals[k] = <theta, acts[k]>, each summed in the order of the
// coordinates, for four actions at a time: four independent sums advance
// together instead of one waiting on each addition (the same values).
func values(vals []float64, acts [][]float64, theta []float64) {
	k := 0
	for ; k+4 <= len(acts); k += 4 {
		a0, a1, a2, a3 := acts[k], acts[k+1], acts[k+2], acts[k+3]
		a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
		theta := theta[:len(a0)]
		var v0, v1, v2, v3 float64
		for i, t := range theta {
			v0 += a0[i] * t
			v1 += a1[i] * t
			v2 += a2[i] * t
			v3 += a3[i] * t
		}
		vals[k], vals[k+1], vals[k+2], vals[k+3] = v0, v1, v2, v3
	}
	for ; k < len(acts); k++ {
		v := 0.0
		for i, x := range acts[k] {
			v += x * theta[i]
		}
		vals[k] = v
	}
}

// Value returns <theta*, a_k> for the k-th action of the last decision
// set.
func (r *ContextRun) Value(k int) float64 { return r.vals[k] }

// Reward returns the observed reward of the k-th action at this step:
// <theta*, a_k> + eta, clipped to the range.
func (r *ContextRun) Reward(k int) float64 {
	return min(max(r.Value(k)+r.eta, r.c.Range.Lo), r.c.Range.Hi)
}

// Arms returns K.
func (c *Contextual) Arms() int { return c.K }

// ParseContextual builds a contextual environment from its spec:
//
//	contextual-gauss:k=K,d=D[,noise=gauss|bounded][,sigma=S][,instance=SEED][,lo=L,hi=H][,norm=rescale|none]
//
// (defaults K = 10, D = 3, S = 1, [L, H] = [-1, 1], norm=rescale); theta*
// is drawn from the instance seed, by default seed.
func ParseContextual(spec string, seed uint64) (*Contextual, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if kind == "sparse-gauss" {
		return parseSparse(spec, rest, seed)
	}
	if kind != "contextual-gauss" {
		return nil, errorf("unknown contextual environment %q", kind)
	}
	kv, err := keys(spec, rest, "noise", "sigma", "instance", "lo", "hi", "k", "d", "norm")
	if err != nil {
		return nil, err
	}
	sigma, bounded, rg, inst, err := linearCommon(spec, kv, seed)
	if err != nil {
		return nil, err
	}
	dims := map[string]int{"k": 10, "d": 3}
	if err := intKeys(spec, kv, dims, 10000); err != nil {
		return nil, err
	}
	if err := checkCells(spec, dims["k"], dims["d"]); err != nil {
		return nil, err
	}
	rescale := true
	switch kv["norm"] {
	case "", "rescale":
	case "none":
		rescale = false
	default:
		return nil, errorf("spec %q: norm must be rescale or none, got %q", spec, kv["norm"])
	}
	theta := unitVector(noise.Stream(inst, tagInstance), dims["d"])
	return &Contextual{K: dims["k"], D: dims["d"], Theta: theta, Sigma: sigma, Bounded: bounded, Range: rg,
		Rescale: rescale, spec: canonical(kind, kv, inst)}, nil
}

// parseSparse builds a sparse-gauss instance (seed 002):
//
//	sparse-gauss:k=K,d=D,s=S0[,corr=C][,sigma=S][,noise=gauss|bounded][,instance=SEED][,lo=L,hi=H]
//
// (defaults K = 10, D = 100, S0 = 5, C = 0, S = 0.1, [L, H] = [-1, 1]):
// K actions per step in R^D, theta* S0-sparse (see Contextual), rewards
// <theta*, x> + eta clipped to the range.
func parseSparse(spec, rest string, seed uint64) (*Contextual, error) {
	kv, err := keys(spec, rest, "noise", "sigma", "instance", "lo", "hi", "k", "d", "s", "corr")
	if err != nil {
		return nil, err
	}
	if _, ok := kv["sigma"]; !ok {
		kv["sigma"] = "0.1"
	}
	sigma, bounded, rg, inst, err := linearCommon(spec, kv, seed)
	if err != nil {
		return nil, err
	}
	dims := map[string]int{"k": 10, "d": 100, "s": 5}
	if err := intKeys(spec, kv, dims, 100000); err != nil {
		return nil, err
	}
	if dims["s"] > dims["d"] {
		return nil, errorf("spec %q: the sparsity s=%d exceeds the dimension d=%d", spec, dims["s"], dims["d"])
	}
	if err := checkCells(spec, dims["k"], dims["d"]); err != nil {
		return nil, err
	}
	corr := 0.0
	if v, ok := kv["corr"]; ok {
		corr, err = strconv.ParseFloat(v, 64)
		if err != nil || !(corr >= 0 && corr < 1) {
			return nil, errorf("spec %q: corr=%q must lie in [0, 1)", spec, v)
		}
	}
	r := noise.Stream(inst, tagInstance)
	theta := make([]float64, dims["d"])
	for _, i := range r.Perm(dims["d"])[:dims["s"]] {
		theta[i] = 1 / math.Sqrt(float64(dims["s"]))
		if r.IntN(2) == 0 {
			theta[i] = -theta[i]
		}
	}
	return &Contextual{K: dims["k"], D: dims["d"], Theta: theta, Sigma: sigma, Bounded: bounded, Range: rg,
		Rescale: true, Sparse: true, Corr: corr, spec: canonical("sparse-gauss", kv, inst)}, nil
}

// ar1 turns standard normals z, in place, into the AR(1) sequence x_0 =
// z_0, x_i = rho x_{i-1} + sqrt(1 - rho^2) z_i: unit variances and
// correlations rho^|i-j| (the Toeplitz covariance of sparse-gauss).
func ar1(z []float64, rho float64) {
	inn := math.Sqrt(1 - rho*rho)
	for i := 1; i < len(z); i++ {
		z[i] = rho*z[i-1] + inn*z[i]
	}
}

// intKeys reads the integer keys of dims (defaults in place) from kv, each
// in [1, hi].
func intKeys(spec string, kv map[string]string, dims map[string]int, hi int) error {
	for k := range dims {
		if v, ok := kv[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > hi {
				return errorf("spec %q: %s=%q must be an integer in [1, %d]", spec, k, v, hi)
			}
			dims[k] = n
		}
	}
	return nil
}
