package engine

import (
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/service/fault"
)

// Identified is the outcome of a best-arm identification with fixed
// confidence (bandit.Identifier: adap-tt, dp-se-bai) once its stopping
// rule has fired: the recommended arm, the pulls it took, and the risk
// delta, the probability at most that it is not the best arm (for
// rewards drawn i.i.d. per arm, as the identification assumes). The rule
// reads only released, private statistics, so the stop and the winner are
// as private as the rest of the run. From then on the experiment takes no
// decisions (Conflict); rewards of decisions taken before still come.
type Identified struct {
	Arm   int     `json:"arm"`
	Pulls int64   `json:"after_pulls"`
	Delta float64 `json:"delta"`
}

// identified returns the outcome of the experiment's identification, nil
// while it runs or for a policy that identifies nothing. The caller
// holds x.mu.
func (x *Experiment) identified() *Identified {
	if x.pol == nil {
		return nil
	}
	id, ok := x.pol.Policy().(bandit.Identifier)
	if !ok {
		return nil
	}
	arm, tau, ok := id.Decision()
	if !ok {
		return nil
	}
	a, err := catalog.Parse(x.def.Algorithm) // (it built the policy)
	if err != nil {
		return nil
	}
	return &Identified{Arm: arm, Pulls: tau, Delta: a.Values["delta"]}
}

// stoppedIdentifying is the error of a decision asked of an
// identification that has stopped.
func (x *Experiment) stoppedIdentifying(w *Identified) error {
	return fault.Errorf(fault.Conflict, "experiment %q has identified arm %d as the best after %d pulls (wrong with probability at most %g): it takes no more decisions",
		x.def.ID, w.Arm, w.Pulls, w.Delta)
}
