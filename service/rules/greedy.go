package rules

import "errors"

// ErrNoGreedy is a learner without a greedy choice for apprentice mode's
// test: one that ranks by no released estimate.
var ErrNoGreedy = errors.New("service: the learner has no greedy choice for apprentice mode")

// greedier is a learner that ranks by its released estimate
// (contextual.OFUL's Greedy).
type greedier interface {
	Greedy(actions [][]float64) (int, error)
}

// GreedyOf returns the greedy choice among set of learner (the engine's
// policy, policy.Decider.Policy) that apprentice mode's test keeps for
// a decision: ErrNoGreedy when it has none, the learner's error when it
// fails.
func GreedyOf(learner any, set [][]float64) (Greedy, error) {
	g, ok := learner.(greedier)
	if !ok {
		return Greedy{}, ErrNoGreedy
	}
	pi, err := g.Greedy(set)
	return Greedy{Pi: pi, K: len(set)}, err
}
