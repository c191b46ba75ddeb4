// Package bandit is the contract between bandit policies and whatever runs
// them: the simulator, or a server that takes one decision at a time.
//
// A policy speaks in plans: Next says which arm to play and for how many
// steps it commits to it (1 for per-step algorithms, a whole episode for
// episodic ones). The caller plays the plan, all at once or a step at a
// time, and reports the outcome through Update as sufficient statistics: a
// count and a reward sum (and the individual rewards when the policy asks
// for them). Next then returns what is left of the plan, or the next plan
// once it is complete.
//
// Policies take all their randomness from the Setting they are built with,
// so that a seeded run is reproducible bit for bit.
//
// A policy, and Delayed around it, is not safe for concurrent use: a
// server serialises the calls to each (the decision service holds a lock
// per experiment). Setting.Horizon is the T that the confidence bounds
// and the theorems' guarantees are stated for; a policy is not stopped
// at it, and its regret guarantee ends there.
package bandit

import (
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// Plan is a policy's commitment: play Arm for the next Count steps.
type Plan struct {
	Arm   int
	Count int64
}

// Rest returns the plan that plays arm for the rest of a horizon of which
// t steps are played (for ever, 2^62 steps, when the horizon is unknown).
func Rest(arm int, horizon, t int64) Plan {
	if horizon > t {
		return Plan{Arm: arm, Count: horizon - t}
	}
	return Plan{Arm: arm, Count: 1 << 62}
}

// Check reports an error unless the feedback fits the plan: same arm, at
// most the plan's count.
func (p Plan) Check(f Feedback) error {
	if f.Arm != p.Arm || f.Count > p.Count {
		return inputf("feedback for %d pulls of arm %d, but the plan is %d pulls of arm %d", f.Count, f.Arm, p.Count, p.Arm)
	}
	return nil
}

// Sum checks f against the plan (Check) and returns the sum of its
// rewards in the declared bounds b (mechanism.Bounds.Sum: samples
// clipped, a sum refused unless some rewards in b make it).
func (p Plan) Sum(f Feedback, b mechanism.Bounds) (float64, error) {
	if err := p.Check(f); err != nil {
		return 0, err
	}
	return b.Sum(f.Count, f.Sum, f.Samples)
}

// Feedback is the outcome of Count pulls of Arm: the sum of the rewards
// and, when the policy asked for them (see SampleUser), the rewards. Count
// may be less than what remains of the plan (a server reports one pull at
// a time; a simulation stops at the horizon) but never more.
//
// Privacy obligation of the caller. A private policy derives its noise
// from the declared reward range (Setting.Bounds): one reward moves a sum
// by at most the range's width. It clips every reward it sees
// individually: a single reward (Count = 1) or the Samples. A Sum of
// Count > 1 rewards without Samples cannot be clipped reward by reward;
// the policy only checks that it lies in [Count lo, Count hi]. A sum
// built from out-of-range rewards can pass that check and break the
// sensitivity, and with it the guarantee. Outside the simulator (whose
// environments clip every reward before summing), report rewards one at a
// time or with Samples, or clip each reward to the declared range before
// adding it to Sum.
type Feedback struct {
	Arm     int
	Count   int64
	Sum     float64
	Samples []float64
}

// Policy chooses arms. Next must be idempotent: called twice without an
// Update in between, it returns the same plan.
type Policy interface {
	// Next returns the plan to play: the arm and how many steps remain of it.
	Next() Plan
	// Update reports the outcome of part or all of the current plan. It
	// returns an error for feedback that does not match the plan, and for
	// rewards that are NaN, infinite, or (as sums) outside the range.
	Update(Feedback) error
}

// SampleUser is implemented by policies that need the individual rewards
// in Feedback.Samples, not only their sum.
type SampleUser interface {
	NeedsSamples() bool
}

// Episodic is implemented by policies that run in episodes (or phases), to
// report how many they have started.
type Episodic interface {
	Episodes() int64
}

// Forgetter is implemented by policies that forget: once a block of
// rewards (an episode) has been released with noise, their state depends
// on those rewards only through the released values. A service may then
// delete the rewards of released blocks (data minimisation) and rebuild
// the policy by replaying placeholders for them on a noise source that
// returns the recorded releases.
type Forgetter interface {
	// Unreleased returns how many of the rewards the policy has seen no
	// release covers yet, and false when the policy keeps raw statistics
	// (a non-private budget): then nothing may be deleted.
	Unreleased() (int64, bool)
}

// ArmStat is the released statistic of one arm: the noisy mean of its
// last released block of Samples rewards, and the noise's standard
// deviation (Gaussian) or scale (Laplace).
type ArmStat struct {
	Arm     int     `json:"arm"`
	Samples int64   `json:"samples"`
	Mean    float64 `json:"mean"`
	Noise   float64 `json:"noise_scale"`
}

// Releaser is implemented by policies that can show what they released,
// per arm. Only released (noisy) values appear: never raw sums.
type Releaser interface {
	Released() []ArmStat
}

// Setting is what a policy is told when it is built.
type Setting struct {
	// Arms is the number of arms, K.
	Arms int
	// Horizon is T, or 0 when unknown. Anytime policies ignore it.
	Horizon int64
	// Bounds is the declared reward range. Private policies derive every
	// sensitivity from it; rewards outside it are clipped (single rewards
	// and samples) or rejected (sums that no in-range rewards can make).
	Bounds mechanism.Bounds
	// Rand is the policy's own randomness (tie-breaking, sampling).
	Rand *rand.Rand
	// Noise is where the policy's mechanisms draw privacy noise.
	Noise noise.Noise
	// Actions holds the action vectors of a linear bandit (arm i is
	// Actions[i]); nil for a plain K-armed bandit.
	Actions [][]float64
}

// Linear is implemented by environments whose arms are vectors.
type Linear interface {
	Actions() [][]float64
}
