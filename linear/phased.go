// Package linear holds policies for stochastic linear bandits with a
// finite action set (arm i is the vector bandit.Setting.Actions[i]):
// G-optimal design based phased elimination (GOPE) and its private
// versions AdaC-GOPE and AdaR-GOPE-Var (seed 001, Section IV-A and
// Appendix H), and the private phased elimination with core sets of Hanna
// et al. 2022 (seed 000, Algorithm 4).
//
// Each phase plays a design over the surviving actions as plans (one per
// support action), reads the rewards once at its end to estimate theta,
// and eliminates actions. The actions played in a phase do not depend on
// its rewards, and each reward enters one estimate: the private versions
// add noise once per phase. Estimates live in the span of the surviving
// actions (design.Span), so action sets that do not span R^d are handled.
package linear

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/design"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
)

// phased is the skeleton shared by the policies of this package.
type phased struct {
	bounds  mechanism.Bounds
	x       [][]float64
	horizon int64
	active  []int

	phase int
	des   *design.Design // design of the current phase over active
	// the active set and tolerance des was computed for
	desActive []int
	desTol    float64
	counts    []int64 // pulls per action in this phase
	order     []int   // support actions, in play order
	pos       int
	done      int64
	sums      mechanism.Sums // reward sums per action in this phase (exact too on exact noise)
	t         int64
	final     int // action played for ever once set, else -1

	// plan sets des, counts and order for a new phase, or final.
	plan func() error
	// end estimates theta and eliminates at the end of a phase.
	end func() error
}

// newPhased returns the skeleton; a private policy keeps its sums exactly
// too when its noise source takes exact statistics.
func newPhased(s bandit.Setting, private bool) (*phased, error) {
	if err := checkSetting(s); err != nil {
		return nil, err
	}
	p := &phased{bounds: s.Bounds, x: s.Actions, horizon: s.Horizon, final: -1,
		counts: make([]int64, s.Arms), sums: mechanism.NewSums(s.Arms, private && mechanism.ExactFor(s.Noise))}
	for a := range s.Actions {
		p.active = append(p.active, a)
	}
	return p, nil
}

// checkSetting checks that s describes a linear bandit: the action
// vectors of its arms, finite, and a valid reward range.
func checkSetting(s bandit.Setting) error {
	if len(s.Actions) < 2 || len(s.Actions) != s.Arms {
		return inputf("a linear bandit needs the action vectors of its %d arms (got %d)", s.Arms, len(s.Actions))
	}
	if err := mechanism.CheckActions(s.Actions, len(s.Actions[0])); err != nil {
		return err
	}
	return s.Bounds.Validate()
}

// start begins the next phase.
func (p *phased) start() error {
	p.phase++
	p.sums.Reset()
	clear(p.counts)
	p.order, p.pos, p.done = p.order[:0], 0, 0
	if len(p.active) == 1 {
		p.final = p.active[0]
		return nil
	}
	return p.plan()
}

// designActive computes a design over the active actions with tolerance
// tol, or keeps the last one when no action was eliminated since (the
// design depends on the active set and tol only).
func (p *phased) designActive(tol float64) error {
	if p.des != nil && tol == p.desTol && slices.Equal(p.active, p.desActive) {
		return nil
	}
	acts := make([][]float64, len(p.active))
	for i, a := range p.active {
		acts[i] = p.x[a]
	}
	des, err := design.GOptimal(acts, tol)
	p.des, p.desTol, p.desActive = des, tol, slices.Clone(p.active)
	return err
}

// schedule plays each support action ceil(c pi(a)) times.
func (p *phased) schedule(c float64) {
	n := p.des.Counts(c)
	for i, a := range p.active {
		if n[i] > 0 {
			p.counts[a] = n[i]
			p.order = append(p.order, a)
		}
	}
}

// Next returns the rest of the current support action's pulls, or the
// final action for the rest of the horizon.
func (p *phased) Next() bandit.Plan {
	if p.final >= 0 {
		return bandit.Rest(p.final, p.horizon, p.t)
	}
	a := p.order[p.pos]
	return bandit.Plan{Arm: a, Count: p.counts[a] - p.done}
}

// Update records rewards; at the end of a phase it estimates, eliminates
// and plans the next phase.
func (p *phased) Update(f bandit.Feedback) error {
	s, err := p.Next().Sum(f, p.bounds)
	if err != nil {
		return inputf("%w", err)
	}
	p.t += f.Count
	if p.final >= 0 {
		return nil
	}
	p.sums.Add(f.Arm, s)
	p.done += f.Count
	if p.done < p.counts[f.Arm] {
		return nil
	}
	p.pos, p.done = p.pos+1, 0
	if p.pos < len(p.order) {
		return nil
	}
	if err := p.end(); err != nil {
		return err
	}
	return p.start()
}

// Episodes returns the number of phases started.
func (p *phased) Episodes() int64 { return int64(p.phase) }

// Active returns the actions not yet eliminated.
func (p *phased) Active() []int { return append([]int(nil), p.active...) }

// gram returns V = sum over the support of counts(a) x_a x_a^T and
// b = sum of x_a times y(a), in the coordinates of the phase's span.
func (p *phased) gram(y func(a int) float64) (*mat.SymDense, *mat.VecDense) {
	m := p.des.Dim
	v := mat.NewSymDense(m, nil)
	b := mat.NewVecDense(m, nil)
	for i, a := range p.active {
		if p.counts[a] == 0 {
			continue
		}
		x := mat.NewVecDense(m, append([]float64(nil), p.des.Coords[i]...))
		v.SymRankOne(v, float64(p.counts[a]), x)
		b.AddScaledVec(b, y(a), x)
	}
	return v, b
}

// gramReleased is gram with each support action's reward sum passed
// through release once (the mechanism of a private policy).
func (p *phased) gramReleased(release func(mechanism.Sums, int64) ([]float64, error)) (*mat.SymDense, *mat.VecDense, error) {
	var rerr error
	v, b := p.gram(func(a int) float64 {
		r, err := release(p.sums.At(a), 1)
		if err != nil {
			if rerr == nil {
				rerr = err
			}
			return 0
		}
		return r[0]
	})
	return v, b, rerr
}

// eliminate keeps the actions a with max_b <theta, x_b - x_a> <= margin
// (theta in the phase's coordinates).
func (p *phased) eliminate(theta *mat.VecDense, margin float64) {
	vals := make([]float64, len(p.active))
	best := math.Inf(-1)
	for i := range p.active {
		vals[i] = mat.Dot(theta, mat.NewVecDense(p.des.Dim, append([]float64(nil), p.des.Coords[i]...)))
		best = math.Max(best, vals[i])
	}
	kept := p.active[:0]
	for i, a := range p.active {
		if best-vals[i] <= margin {
			kept = append(kept, a)
		}
	}
	p.active = kept
}

// inverse returns V^-1, computed once per phase.
func inverse(v *mat.SymDense) (*mat.Dense, error) {
	m := v.SymmetricDim()
	a := make([]float64, m*m)
	for i := range m {
		for j := range m {
			a[i*m+j] = v.At(i, j)
		}
	}
	inv, ok := linalg.InvSPD(a, m)
	if !ok {
		return nil, liberr.New("linear", "the design matrix is singular")
	}
	return mat.NewDense(m, m, inv), nil
}

// apply returns M b.
func apply(m *mat.Dense, b *mat.VecDense) *mat.VecDense {
	var out mat.VecDense
	out.MulVec(m, b)
	return &out
}

// invSqrt returns V^-1/2, the symmetric inverse square root (by
// eigendecomposition, not a Cholesky factor).
func invSqrt(v *mat.SymDense) (*mat.Dense, error) {
	var eig mat.EigenSym
	if !eig.Factorize(v, true) {
		return nil, liberr.New("linear", "eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	n := len(vals)
	d := mat.NewDiagDense(n, nil)
	for i, l := range vals {
		if l <= 0 {
			return nil, liberr.New("linear", "the design matrix is not positive definite")
		}
		d.SetDiag(i, 1/math.Sqrt(l))
	}
	var r, out mat.Dense
	r.Mul(&q, d)
	out.Mul(&r, q.T())
	return &out, nil
}
