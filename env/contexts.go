package env

import "github.com/dpbandit/dpbandit/mechanism"

// Contexts is a contextual bandit environment: a generator of decision
// sets (Contextual, drawn from a law) or a classification data set turned
// into a bandit (Dataset). Runs built from the same (seed, run) give the
// same sequence, so every policy of a run faces the same decision sets
// and reward noise (common random numbers).
type Contexts interface {
	// Dim is the dimension of the actions.
	Dim() int
	// Arms is the number of actions in each decision set.
	Arms() int
	// Bounds is the declared reward range.
	Bounds() mechanism.Bounds
	// Support lists theta*'s non-zero coordinates (every coordinate but
	// the zero ones; nil when the environment has no theta*).
	Support() []int
	// NewRun returns the sequence of run run of an experiment seeded by
	// seed.
	NewRun(seed, run uint64) Rounds
	// String returns the canonical spec.
	String() string
}

// Rounds is one run's sequence of decision sets.
type Rounds interface {
	// Next draws the next decision set; its slices are reused by the
	// next call.
	Next() [][]float64
	// Value is the mean reward of the k-th action of the last decision
	// set.
	Value(k int) float64
	// Reward is the observed reward of the k-th action of the last
	// decision set, within the declared range; every call for a step
	// sees the same noise.
	Reward(k int) float64
}
