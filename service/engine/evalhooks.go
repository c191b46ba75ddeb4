package engine

import (
	"context"
)

// What package evaluation (Personalizer's off-policy evaluations of an
// experiment's stored log) uses of an experiment: its key and
// definition (lifecycle.go), Durable, Learned (rankhooks.go, through
// rank.Estimate), Wait and Env. None
// of them holds the experiment's lock past its return: an evaluation
// reads the store and reserves its units' debits in the ledger under
// the ledger's own lock, as a live reward's reservation does inside x.mu.

// Durable waits until every change the experiment submitted is
// committed, so that its stored log holds every acknowledged reward.
func (x *Experiment) Durable(ctx context.Context) error {
	x.mu.Lock()
	last := x.last
	x.mu.Unlock()
	if last == nil {
		return nil
	}
	return x.env.Writer.Wait(ctx, last)
}
