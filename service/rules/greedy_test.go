package rules

import (
	"errors"
	"testing"
)

// greedyLearner chooses pi, or fails with err.
type greedyLearner struct {
	pi  int
	err error
}

func (g greedyLearner) Greedy([][]float64) (int, error) { return g.pi, g.err }

// TestGreedyOf: the test keeps a learner's greedy choice among the k
// eligible actions; a learner without one is ErrNoGreedy, and the
// learner's own failure is its error.
func TestGreedyOf(t *testing.T) {
	set := [][]float64{{1}, {2}, {3}}
	if g, err := GreedyOf(greedyLearner{pi: 2}, set); err != nil || g != (Greedy{Pi: 2, K: 3}) {
		t.Fatalf("greedy %+v, %v; want {2 3}", g, err)
	}
	if _, err := GreedyOf(struct{}{}, set); !errors.Is(err, ErrNoGreedy) {
		t.Fatalf("a learner without a greedy choice: %v", err)
	}
	failed := errors.New("the learner failed")
	if _, err := GreedyOf(greedyLearner{err: failed}, set); !errors.Is(err, failed) {
		t.Fatalf("a failing learner: %v", err)
	}
}
