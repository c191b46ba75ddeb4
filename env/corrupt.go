package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Corrupted is a linear bandit whose observed rewards an adversary
// corrupts (seed 004, Eq. (3)): each reward, independently with
// probability Alpha, is replaced by the adversary's value; the learner
// cannot tell which. Regret is measured on the true means (Means returns
// the uncorrupted ones).
//
// The adversaries:
//
//	far     a constant far outside the range: hi + 1000 (hi - lo);
//	flip    the sign-flipped reward, -r;
//	target  the values that make the worst action look best: hi on the
//	        action of lowest true mean, lo on every other.
//	edge    target's direction, out of the range but just below the
//	        spectral Filter's trigger (robust.Filter, 004 Algorithm 2):
//	        +-EdgeFactor Y/sqrt(Alpha), Y the root mean square of the
//	        clean observations the adversary has seen in the run (an
//	        Attack's state; the range's max(|lo|, |hi|) for the reward
//	        streams, where the policies clip it to target's values).
//
// Why edge sits below the trigger. The Filter sees the points y_j
// M^-1/2 a_j of a batch of n observations, whose clean second moment is
// about (Y^2/n) I (sum_j M^-1/2 a_j a_j^T M^-1/2 = I), and fires when the
// top eigenvalue of their covariance exceeds 4 lambda, lambda about
// Y^2/n: corruption may add about 3 Y^2/n. On a support action a of
// design weight pi_a, a^T M^-1 a = m/n at the G-optimal design (m the
// dimension), so its alpha pi_a n corrupted points at value v add about
// alpha pi_a m v^2/n along M^-1/2 a; with pi_a m about 1 that stays below
// 3 Y^2/n while v < sqrt(3) Y/sqrt(alpha). EdgeFactor = 1.6 sits just
// below; it shifts the action's mean by about 1.6 Y sqrt(alpha), 1.1 at
// alpha = 0.05 and Y = 3 (M1 at eps = 1 on [-1, 1]), against gaps of at
// most 2.
//
// Declared range and corruption. Bounds is the declared range the
// policies' privacy calibration uses, and the clean rewards lie in it;
// corrupted values need not (far, and flip on a range not symmetric about
// 0). A policy clips every reward it sees to the declared range, so a far
// value enters its statistics as hi: clipped into the range, it is still
// corrupted, and robustness must come from the estimator, not from the
// clipping (target stays inside the range and shows exactly that).
//
// Rewards are drawn one at a time: the clean reward, then a Bernoulli
// (Alpha) draw deciding whether it is replaced, then the adversary's
// value (direct simulation, exact in distribution), in the stream's
// blocks so that every policy of a run sees the same corrupted sequence.
type Corrupted struct {
	*Linear
	Alpha     float64
	Adversary string
	worst     int
	spec      string
}

// Adversaries lists the corruption adversaries.
var Adversaries = []string{"far", "flip", "target", "edge"}

// EdgeFactor places the edge adversary's values just below the Filter's
// trigger (see Corrupted).
const EdgeFactor = 1.6

// NewCorrupted wraps a linear instance with corruption probability alpha
// in [0, 1/4) (004's assumption) and an adversary of Adversaries.
func NewCorrupted(l *Linear, alpha float64, adversary, spec string) (*Corrupted, error) {
	if !(alpha >= 0 && alpha < 0.25) {
		return nil, errorf("the corruption probability must lie in [0, 1/4), got %v", alpha)
	}
	if !slices.Contains(Adversaries, adversary) {
		return nil, errorf("unknown adversary %q (known: %s)", adversary, strings.Join(Adversaries, ", "))
	}
	m := l.Means()
	worst := 0
	for a, v := range m {
		if v < m[worst] {
			worst = a
		}
	}
	return &Corrupted{Linear: l, Alpha: alpha, Adversary: adversary, worst: worst, spec: spec}, nil
}

// String returns the spec.
func (c *Corrupted) String() string { return c.spec }

// Unclipped is implemented by instances whose observed rewards may leave
// their declared range (corrupted ones): a simulator must then hand the
// policies each reward, not only sums, for them to clip.
type Unclipped interface {
	Unclipped() bool
}

// Unclipped reports whether the adversary's values can leave the range:
// far and edge always; flip unless the range is symmetric about 0;
// target never.
func (c *Corrupted) Unclipped() bool {
	switch c.Adversary {
	case "far", "edge":
		return c.Alpha > 0
	case "flip":
		return c.Alpha > 0 && c.Range.Lo != -c.Range.Hi
	}
	return false
}

// corrupt returns the adversary's value for a clean observation x of
// arm, y the root mean square of the clean observations seen (edge).
func (c *Corrupted) corrupt(arm int, x, y float64) float64 {
	b := c.Range
	switch c.Adversary {
	case "far":
		return b.Hi + 1000*b.Width()
	case "flip":
		return -x
	case "edge":
		v := EdgeFactor * y / math.Sqrt(c.Alpha)
		if arm == c.worst {
			return v
		}
		return -v
	}
	if arm == c.worst {
		return b.Hi
	}
	return b.Lo
}

// Stream returns the action's corrupted reward sequence in the run.
func (c *Corrupted) Stream(seed, run uint64, arm int, capacity int64) *Stream {
	return newStream(corruptLaw{c.law(arm), c, arm}, capacity, seed, run, arm)
}

// Draw draws one corrupted reward.
func (c *Corrupted) Draw(r *rand.Rand, arm int) float64 {
	return c.Observe(r, arm, c.Linear.Draw(r, arm))
}

// Observe passes one observation x of arm through the adversary: with
// probability Alpha (one Bernoulli draw from r) it returns the
// adversary's value, else x. The environment's own streams corrupt the
// rewards they return; a learner that sees other observations than
// rewards (the client reports of local DP, seed 004 Section 3) has them
// corrupted by Observe instead, after the clients.
func (c *Corrupted) Observe(r *rand.Rand, arm int, x float64) float64 {
	return c.observe(r, arm, x, max(math.Abs(c.Range.Lo), math.Abs(c.Range.Hi)))
}

func (c *Corrupted) observe(r *rand.Rand, arm int, x, y float64) float64 {
	if r.Float64() < c.Alpha {
		return c.corrupt(arm, x, y)
	}
	return x
}

// Attack is one run's adversary on observations that are not the
// environment's own rewards (the client reports of local DP): it keeps
// what the edge adversary learns of them.
type Attack struct {
	c    *Corrupted
	n    float64
	sum2 float64
}

// NewAttack returns the adversary of one run.
func (c *Corrupted) NewAttack() *Attack { return &Attack{c: c} }

// Observe is Corrupted.Observe, the edge adversary scaling its values by
// the root mean square of the clean observations seen so far, this one
// included.
func (a *Attack) Observe(r *rand.Rand, arm int, x float64) float64 {
	a.n++
	a.sum2 += x * x
	return a.c.observe(r, arm, x, math.Sqrt(a.sum2/a.n))
}

// corruptLaw is an arm's law with corruption: leaves of clean observed
// rewards, each replaced with probability Alpha.
type corruptLaw struct {
	base law
	c    *Corrupted
	arm  int
}

func (corruptLaw) total(*rand.Rand, int64) float64          { return 0 }
func (corruptLaw) split(*rand.Rand, int64, float64) float64 { return 0 }
func (corruptLaw) observe(x float64) float64                { return x }
func (corruptLaw) exact() bool                              { return false }

func (l corruptLaw) leaf(r *rand.Rand, s float64, v *[leafSize]float64) {
	l.base.leaf(r, s, v)
	for i, x := range v {
		v[i] = l.c.Observe(r, l.arm, l.base.observe(x))
	}
}

// corruption reads the corrupt and adversary keys of a linear spec.
func corruption(spec string, kv map[string]string) (alpha float64, adversary string, err error) {
	v, ok := kv["corrupt"]
	if !ok {
		if _, ok := kv["adversary"]; ok {
			return 0, "", errorf("spec %q: adversary without corrupt=ALPHA", spec)
		}
		return 0, "", nil
	}
	if alpha, err = strconv.ParseFloat(v, 64); err != nil {
		return 0, "", errorf("spec %q: corrupt=%q is not a number", spec, v)
	}
	adversary = kv["adversary"]
	if adversary == "" {
		adversary = "far"
		kv["adversary"] = adversary
	}
	return alpha, adversary, nil
}
