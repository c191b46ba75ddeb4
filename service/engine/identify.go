package engine

import (
	"github.com/dpbandit/dpbandit/service/outcome"
)

// identified returns the outcome of the experiment's identification
// (outcome.Identify), nil while it runs or for a policy that identifies
// nothing. The caller holds x.mu.
func (x *Experiment) identified() *outcome.Identified {
	if x.pol == nil {
		return nil
	}
	return outcome.Identify(x.def.Algorithm, x.pol.Policy())
}
