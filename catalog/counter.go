package catalog

import (
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
)

// counterChoice is private FTRL's "counter" parameter: the continual
// counter of its cumulative losses (olo.Setting.Counter). "tree" is
// TreeBasedAgg (seed 003's, the default, whose results are pinned);
// "smooth" the smooth binary mechanism of Andersson and Pagh (2023),
// whose releases have variance d^2/(8 rho) per unit of sensitivity
// against the tree's L^2/(2 rho) (0.57 times the standard deviation at
// T = 10^4). The smooth mechanism is Gaussian: under a pure eps-DP budget
// the tree's Laplace nodes are kept whatever the choice.
var counterChoice = choice("", string(mechanism.CounterTree), string(mechanism.CounterSmooth))

// ftrlLearner adapts a private FTRL constructor to the catalogue, passing
// the counter the spec chooses.
func ftrlLearner[L olo.Learner](f func(olo.Setting, privacy.Budget) (L, error)) func(Args, privacy.Budget, olo.Setting) (olo.Learner, error) {
	return func(a Args, b privacy.Budget, s olo.Setting) (olo.Learner, error) {
		if b.Notion != privacy.Pure {
			s.Counter = mechanism.CounterKind(counterChoice.Choices[int(a.F("counter"))])
		}
		return f(s, b)
	}
}
