package ope

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Release is a differentially private release of an estimate of a
// target policy's value (Private).
type Release struct {
	// Key identifies what was released: the log's SHA-256, the target
	// policy, the estimator (but IPS), the cap, the reward range and the
	// budget.
	Key       string  `json:"key"`
	Estimator string  `json:"estimator"`
	Value     float64 `json:"value"`
	Mechanism string  `json:"mechanism"` // "gaussian" or "laplace"
	Scale     float64 `json:"noise_scale"`
	// Sensitivity is the released statistic's sensitivity to one logged
	// event (replaced by another; the number of events is public), L2
	// for the Gaussian mechanism, L1 for Laplace's.
	Sensitivity float64        `json:"sensitivity"`
	Budget      privacy.Budget `json:"privacy"`
	Events      int            `json:"events"`
	// Released holds the noisy statistics Value is computed from when
	// they are more than Value itself: SNIPS's mean weighted reward and
	// mean weight.
	Released []float64 `json:"released,omitempty"`
	// Model is DR's reward model, released before the estimate.
	Model *ModelRelease `json:"model,omitempty"`
}

// ModelRelease is DR's private reward model: each action's mean reward
// (Private).
type ModelRelease struct {
	// Means is q(a), the noisy reward sum over the noisy count of the
	// action's logged events, clipped into the reward range (its
	// midpoint for a noisy count below 1).
	Means       []float64      `json:"means"`
	Mechanism   string         `json:"mechanism"`
	Scale       float64        `json:"noise_scale"`
	Sensitivity float64        `json:"sensitivity"`
	Budget      privacy.Budget `json:"privacy"`
}

// ErrNoClip is a private release asked for without a weight cap: the
// weights pi/pscore are bounded only by the smallest pscore, a property
// of the data that cannot calibrate the noise.
var ErrNoClip = errorf("a private release needs a weight cap (--clip M): the noise is calibrated to it")

// PrivateEstimators are the estimators Private releases.
var PrivateEstimators = []string{"ips", "snips", "dr"}

// ErrArmsFromLog is a private release of an evaluation whose number of
// actions K was read from the log (Options.Arms = 0): K then depends on
// one event (the first's action_prob or decision set), and with it every
// term.
var ErrArmsFromLog = errorf("a private release needs the declared number of actions (--arms K): read from the log, K depends on one event")

// Private releases res's estimate est under the budget b, with noise
// from package mechanism (Gaussian for a zCDP, (eps, delta) or Renyi
// budget, Laplace with the L1 sensitivity for pure eps-DP), calibrated to
// the estimate's sensitivity to one logged event with a reward replaced
// by another (n, the number of events with a reward, is public; the
// decisions without one are not used). The options are those Evaluate
// computed res with: weights capped at M = Clip, rewards clipped into
// [lo, hi] = Rewards, and K = Arms declared; W = max(hi, 0) -
// min(lo, 0) and R = max(|lo|, |hi|). The sensitivities below are the
// largest changes of one event's terms over the vertices of w in
// [0, M] and r in [lo, hi] (the changes are convex in each, so the
// vertices are the extremes).
//
//   - ips: (1/n) sum w_i r_i, sensitivity M W / n.
//   - snips: the pair ((1/n) sum w_i r_i, (1/n) sum w_i) in one release,
//     L2 sensitivity M max(hi - lo, sqrt(R^2 + 1)) / n (L1: M max(hi -
//     lo, R + 1) / n); the value is their ratio clipped into [lo, hi]
//     (post-processing; the midpoint if the noisy mean weight is not
//     positive).
//   - dr: half the budget (privacy.Split) releases a reward model, each
//     action's reward sum and count (one event moves at most two
//     actions' pairs: L2 sensitivity max(hi - lo, sqrt(2 (R^2 + 1))), L1
//     max(hi - lo, 2 (R + 1))), whose ratios clipped into [lo, hi] are
//     q(a); the other half releases DR with that model fixed, (1/n) sum_i
//     [sum_a pi(a | x_i) q(a) + w_i (r_i - q(a_i))]: each term lies in
//     [lo - M (hi - lo), hi + M (hi - lo)], so the sensitivity is (hi -
//     lo)(1 + 2 M) / n. The composition of the two is within b. The
//     model has no context: Evaluate's ridge model depends on every
//     event with no bound on its sensitivity.
//
// DM is not released: with a private model it is DR without its
// correction, biased where the model is wrong.
func Private(res *Result, est string, b privacy.Budget, nz noise.Noise) (Release, error) {
	if res == nil {
		return Release{}, errorf("no result to release (nil)")
	}
	o := res.opts
	sens, err := sensitivities(est, o, res.Events)
	if err != nil {
		return Release{}, err
	}
	lo, hi := o.Rewards.Lo, o.Rewards.Hi
	n := float64(res.Events)
	mid := (lo + hi) / 2
	rel := Release{Estimator: est, Budget: b, Events: res.Events}
	switch est {
	case "ips":
		v, mech, err := release(b, sens[0], []float64{res.ipsSum / n}, nz)
		if err != nil {
			return rel, err
		}
		rel.Mechanism, rel.Scale, rel.Sensitivity, rel.Value = mech.Name, mech.Scale, mech.Sensitivity, v[0]
		return rel, nil
	case "snips":
		v, mech, err := release(b, sens[0], []float64{res.ipsSum / n, res.wSum / n}, nz)
		if err != nil {
			return rel, err
		}
		rel.Mechanism, rel.Scale, rel.Sensitivity, rel.Released, rel.Value = mech.Name, mech.Scale, mech.Sensitivity, v, mid
		if v[1] > 0 {
			rel.Value = min(max(v[0]/v[1], lo), hi)
		}
		return rel, nil
	}
	// dr
	half, err := privacy.Split(b, 2)
	if err != nil {
		return rel, err
	}
	k := len(res.actions)
	sums := make([]float64, 2*k)
	for a, as := range res.actions {
		sums[a], sums[k+a] = as.rewards, as.count
	}
	noisy, mech, err := release(half, sens[0], sums, nz)
	if err != nil {
		return rel, err
	}
	mr := &ModelRelease{Mechanism: mech.Name, Scale: mech.Scale, Sensitivity: mech.Sensitivity, Budget: half, Means: make([]float64, k)}
	sum := res.ipsSum
	for a, as := range res.actions {
		q := mid
		if noisy[k+a] >= 1 {
			q = min(max(noisy[a]/noisy[k+a], lo), hi)
		}
		mr.Means[a] = q
		sum += q * (as.target - as.weights)
	}
	v, mech, err := release(half, sens[1], []float64{sum / n}, nz)
	if err != nil {
		return rel, err
	}
	rel.Mechanism, rel.Scale, rel.Sensitivity, rel.Value, rel.Model = mech.Name, mech.Scale, mech.Sensitivity, v[0], mr
	return rel, nil
}

// sensitivity is a released statistic's L1 and L2 sensitivities.
type sensitivity struct{ l1, l2 float64 }

// sensitivities returns the sensitivities of est's releases (Private)
// on n events with a reward, under the options o: one for ips and
// snips, two for dr (its reward model's, then its estimate's).
func sensitivities(est string, o Options, n int) ([]sensitivity, error) {
	switch {
	case o.Arms == 0:
		return nil, ErrArmsFromLog
	case o.Clip <= 0:
		return nil, ErrNoClip
	case o.Rewards == nil:
		return nil, errorf("a private release needs the declared reward range")
	case n < 1:
		return nil, ErrNoEvents
	}
	lo, hi, m, nf := o.Rewards.Lo, o.Rewards.Hi, o.Clip, float64(n)
	r := max(math.Abs(lo), math.Abs(hi))
	// A unit of at most g events changes at most g events' terms: by the
	// triangle inequality, g times one event's sensitivity (L1 and L2).
	g := float64(max(o.MaxEventsPerUnit, 1))
	switch est {
	case "ips":
		s := g * m * (max(hi, 0) - min(lo, 0)) / nf
		return []sensitivity{{s, s}}, nil
	case "snips":
		return []sensitivity{{g * m * max(hi-lo, r+1) / nf, g * m * max(hi-lo, math.Hypot(r, 1)) / nf}}, nil
	case "dr":
		s := g * (hi - lo) * (1 + 2*m) / nf
		return []sensitivity{{g * max(hi-lo, 2*(r+1)), g * max(hi-lo, math.Sqrt(2*(r*r+1)))}, {s, s}}, nil
	}
	return nil, errorf("no private release of %q (known: %s)", est, strings.Join(PrivateEstimators, ", "))
}

// CheckPrivate reports, before any log is read, whether Private can
// release est under b with the options o on a log of 1 to maxEvents
// events with a reward: the options a release needs (ErrArmsFromLog,
// ErrNoClip), and noise scales that float64 holds at every such number
// of events (privacy.ErrScaleRange otherwise, naming the budget's
// parameter). A scale grows with the sensitivity, which falls as 1/n,
// so the two ends of the range bound every n between.
func CheckPrivate(est string, b privacy.Budget, o Options, maxEvents int, nz noise.Noise) error {
	if err := o.Validate(); err != nil {
		return err
	}
	for _, n := range []int{1, max(maxEvents, 1)} {
		sens, err := sensitivities(est, o, n)
		if err != nil {
			return err
		}
		part := b
		if est == "dr" {
			if part, err = privacy.Split(b, 2); err != nil {
				return err
			}
		}
		for _, s := range sens {
			if math.IsInf(s.l1, 0) || math.IsInf(s.l2, 0) {
				return &OptionError{Field: "clip", Reason: fmt.Sprintf("the %s release's sensitivity overflows float64 with the cap %v and the reward range %s: a smaller cap or a narrower range", est, o.Clip, o.Rewards)}
			}
			if _, err := mechanism.NewFor(part, s.l1, s.l2, nz); err != nil {
				return err
			}
		}
	}
	return nil
}

// release adds to a copy of x the noise of the mechanism of least error
// for b (mechanism.NewFor: Laplace with the L1 sensitivity s.l1 for a
// pure budget, Gaussian with the L2 sensitivity s.l2 otherwise).
func release(b privacy.Budget, s sensitivity, x []float64, nz noise.Noise) ([]float64, mechanism.Chosen, error) {
	m, err := mechanism.NewFor(b, s.l1, s.l2, nz)
	if err != nil {
		return nil, m, err
	}
	out := append([]float64(nil), x...)
	return out, m, m.AddTo(out)
}

// LogDigest returns the SHA-256 of a log (or of any file), hex-encoded.
func LogDigest(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
