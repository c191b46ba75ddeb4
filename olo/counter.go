package olo

import (
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// counterFor returns the continual counter that Setting.Counter chooses
// for private FTRL, for losses of L2 sensitivity l2, or nil for
// TreeBasedAgg (the default). The regret bounds of seed 003 (Theorems 3.1
// and 3.4) hold for any noise whose releases are identically distributed
// (Lemma 3.3: for an oblivious adversary the expected loss of step t
// depends on the noise of release t-1 only): TreeBasedAgg pads every
// release to L draws for that, and the smooth binary mechanism has it by
// construction (d/2 nodes in every release). The other counters
// (mechanism.CounterBinary, CounterHonaker, CounterFactorisation) have a
// variance that depends on t and are refused. A pure eps-DP budget keeps
// TreeBasedAgg's Laplace nodes: the Gaussian counters cannot meet it.
func counterFor(s Setting, b privacy.Budget, l2 float64) (mechanism.Counter, error) {
	switch s.Counter {
	case "", mechanism.CounterTree:
		return nil, nil
	case mechanism.CounterSmooth:
	default:
		return nil, inputf("private FTRL needs a counter whose releases are identically distributed (tree or smooth), not %q", s.Counter)
	}
	if b.Notion == privacy.Pure {
		return nil, inputf("the %s counter is Gaussian; a pure eps-DP budget needs the tree's Laplace nodes", s.Counter)
	}
	return mechanism.NewCounter(s.Counter, b, l2, s.N, s.T, s.Noise)
}

// useCounter returns counterFor's counter and L~_0, a release of the
// counter's noise on no loss (mechanism.InitialNoise), distributed as
// every later release's noise, as TreeAgg.Initial is for the tree; nils
// for the tree.
func useCounter(s Setting, b privacy.Budget, l2 float64) (mechanism.Counter, []float64, error) {
	c, err := counterFor(s, b, l2)
	if err != nil || c == nil {
		return nil, nil, err
	}
	L, err := mechanism.InitialNoise(c)
	return c, L, err
}

// release sets L to the counter's release after l.
func release(L *[]float64, c mechanism.Counter, l []float64) error {
	r, err := c.Add(l)
	if err == nil {
		*L = r
	}
	return err
}
