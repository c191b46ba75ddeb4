package bandit

// BatchPolicy is a batched linear bandit policy whose rewards reach the
// learner through clients (seed 004): each batch is a plan of pulls per
// action; the clients turn an action's rewards into the reports the
// learner observes; the learner updates once per batch; after the last
// batch it plays one action for the rest of the horizon.
type BatchPolicy interface {
	// Next returns the next batch (Counts[j] pulls of Arms[j]), or ok =
	// false when exploration is over.
	Next() (arms []int, counts []int64, ok bool, err error)
	// Report runs the clients of the batch's j-th action on its rewards.
	Report(j int, rewards []float64) ([]float64, error)
	// Observe takes the batch's observations, per action.
	Observe(obs [][]float64) error
	// Best is the action played once exploration is over.
	Best() int
}
