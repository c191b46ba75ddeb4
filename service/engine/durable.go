package engine

import "context"

// The one way to wait for durability outside the engine: Wait for the
// channels of the Start methods (StartDecide, StartReward,
// StartActivate), Durable for everything the experiment submitted. What
// package evaluation (Personalizer's off-policy evaluations of an
// experiment's stored log) uses of an experiment is its key and
// definition (lifecycle.go), Durable, Learned (rankhooks.go, through
// rank.Estimate) and Evaluating (evalhooks.go); none of them holds the experiment's lock past
// its return: an evaluation reads the store and reserves its units'
// debits in the ledger under the ledger's own lock, as a live reward's
// reservation does inside x.mu.

// Wait returns once the changes of the given channels (StartDecide's,
// StartReward's, StartActivate's, Learned's; a nil one: nothing to wait
// for) are durable, or with the writer's failure (Unavailable) or ctx's
// end.
func (x *Experiment) Wait(ctx context.Context, durable ...chan struct{}) error {
	for _, c := range durable {
		if c == nil {
			continue
		}
		if err := x.env.Writer.Wait(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// Durable waits until every change the experiment submitted is
// committed, so that its stored log holds every acknowledged reward.
func (x *Experiment) Durable(ctx context.Context) error {
	x.mu.Lock()
	last := x.last
	x.mu.Unlock()
	return x.Wait(ctx, last)
}
