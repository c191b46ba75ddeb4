package linear

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// DPPE is the eps-DP phased elimination with core sets of Hanna, Girgis,
// Fragouli and Diggavi (2022), Algorithm 4 of the survey of Chari (seed
// 000, Section 5), on a finite action set (for a continuous set, give it
// the zeta-net of design.Net, as the algorithm's first line does with
// zeta = 1/T).
//
// With L = floor(log2 T) and q = (2T)^(1/L), batch i = 1..L-1 takes a core
// set C_i with distribution pi_i of the active actions A_i (a design with
// a^T V(pi)^-1 a <= 2m, Lemma 2, m the dimension of their span), pulls
// each a in C_i n_ia = ceil(pi_i(a) q^i) times, releases each action's
// reward sum once with the Laplace mechanism (sensitivity w, the width of
// the reward range: Lap(w/eps)), estimates theta^_i = V^-1 sum_a r^_ia a
// with V = sum_a n_ia a a^T, and keeps the actions with
// <a, theta^_i> >= max_b <b, theta^_i> - 2 gamma_i, where
//
//	gamma_i = (q^4 m sqrt(q^i ln(4|A_i|T^2)) + 2 B m^2 + 2 m ln(4|A_i|T^2)) / (eps q^i)
//
// with B = |C_i|/m. After the last batch it plays the best action for the
// rest of the horizon. The survey does not say the base of "log T"; base 2
// makes the batches fill the horizon.
//
// Caution: gamma_i is taken verbatim from the survey's text extraction,
// which looks garbled (the q^4 factor, and eps dividing the statistical
// term); with it the elimination margin stays large for long, so the
// policy explores much longer than Hanna et al.'s analysis suggests. Each
// reward enters one Laplace release, so the policy is eps-DP whatever
// gamma_i is; a rho-zCDP budget is met with eps = sqrt(2 rho).
type DPPE struct {
	*phased
	mech  mechanism.Laplace // at the rewards' range: every phase's release
	eps   float64
	q     float64
	last  int // L - 1
	theta *mat.VecDense
}

// NewDPPE returns DP-PE for a pure eps-DP (or rho-zCDP) budget. It needs
// the horizon.
//
// Private policies rely on Feedback's privacy obligation: report rewards
// one at a time or with Samples, or sums of rewards already clipped to
// the declared range (see bandit.Feedback).
func NewDPPE(s bandit.Setting, b privacy.Budget) (*DPPE, error) {
	ph, err := newPhased(s, b.IsPrivate())
	if err != nil {
		return nil, err
	}
	if s.Horizon < 4 {
		return nil, inputf("DP-PE needs a horizon of at least 4, got %d", s.Horizon)
	}
	if !b.IsPrivate() {
		return nil, inputf("DP-PE needs a privacy budget")
	}
	if err := noise.Check(s.Noise); err != nil {
		return nil, inputf("a private policy: %w", err)
	}
	cal, err := mechanism.CalibrateLaplace(b, s.Noise)
	if err != nil {
		return nil, err
	}
	m, err := cal.At(1)
	if err != nil {
		return nil, err
	}
	// Every phase's release has the sensitivity of the rewards' range:
	// one mechanism, built once.
	mech, err := cal.At(ph.bounds.Width())
	if err != nil {
		return nil, err
	}
	L := int(math.Floor(math.Log2(float64(s.Horizon))))
	p := &DPPE{phased: ph, mech: mech, eps: 1 / m.Scale(),
		q: math.Pow(2*float64(s.Horizon), 1/float64(L)), last: L - 1}
	ph.plan, ph.end = p.plan, p.end
	return p, ph.start()
}

func (p *DPPE) plan() error {
	if p.phase > p.last {
		// Play argmax <a, theta^> over the active actions for ever.
		best, bv := p.active[0], math.Inf(-1)
		for i, a := range p.active {
			v := mat.Dot(p.theta, mat.NewVecDense(p.des.Dim, append([]float64(nil), p.des.Coords[i]...)))
			if v > bv {
				best, bv = a, v
			}
		}
		p.final = best
		return nil
	}
	if err := p.designActive(1); err != nil { // a^T V^-1 a <= 2m: Lemma 2's core set
		return err
	}
	p.schedule(math.Pow(p.q, float64(p.phase)))
	return nil
}

// Gamma returns gamma_i for batch i with n active actions, core set size
// c, span dimension m and horizon T.
func (p *DPPE) Gamma(i, n, c, m int, T int64) float64 {
	qi := math.Pow(p.q, float64(i))
	md := float64(m)
	l := math.Log(4 * float64(n) * float64(T) * float64(T))
	bc := float64(c) / md
	return (math.Pow(p.q, 4)*md*math.Sqrt(qi*l) + 2*bc*md*md + 2*md*l) / (p.eps * qi)
}

func (p *DPPE) end() error {
	v, b, err := p.gramReleased(p.mech.ReleaseSums)
	if err != nil {
		return err
	}
	inv, err := inverse(v)
	if err != nil {
		return err
	}
	p.theta = apply(inv, b)
	margin := 2 * p.Gamma(p.phase, len(p.active), len(p.order), p.des.Dim, p.horizon)
	p.eliminate(p.theta, margin)
	// Keep the coordinates of this phase for the final choice: the
	// surviving actions' coordinates are those of the same span.
	if p.phase == p.last {
		p.keepCoords()
	}
	return nil
}

// keepCoords restricts the phase's design coordinates to the surviving
// actions, so that plan can evaluate <a, theta^> for them.
func (p *DPPE) keepCoords() {
	acts := make([][]float64, len(p.active))
	for i, a := range p.active {
		acts[i] = p.x[a]
	}
	// Coordinates in the basis of the last phase.
	coords := make([][]float64, len(p.active))
	for i, a := range acts {
		c := make([]float64, p.des.Dim)
		for j := range c {
			for r := range a {
				c[j] += p.des.Basis.At(r, j) * a[r]
			}
		}
		coords[i] = c
	}
	p.des.Coords = coords
}
