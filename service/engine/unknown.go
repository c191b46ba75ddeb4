package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/service/store"
)

// unknown returns notFound, the answer to a request about an event id
// the experiment does not know (event returned nil), once the experiment
// is sure that it would know it: on a replica, once it still holds its
// lease (Env.Holds), else Holds's error, which the client retries.
//
// A replica whose lease expired while it was paused or starved of CPU
// keeps the experiment in memory until its next renewal finds the lease
// gone (service/replica.go); meanwhile the replica that took the lease over
// decides events this one never saw. Its writes fail at the fence, but
// an answer that writes nothing does not reach the fence: it answered
// 404 "unknown event_id" to the rewards of decisions the new holder had
// answered 200 (TestReplicaFailover on a loaded machine). The check
// comes after the lookup: a lease held since the experiment was loaded
// means that no other replica decided anything since, so that memory
// and the store hold every event. It costs a store read on the answers
// of unknown ids only; a decision's new id, which is unknown too, needs
// none: its commit is fenced.
func (x *Experiment) unknown(notFound error) error {
	if x.env.Holds == nil {
		return notFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.LookupTimeout)
	defer cancel()
	if err := x.env.Holds(ctx, x.def.Key()); err != nil {
		return err
	}
	return notFound
}
