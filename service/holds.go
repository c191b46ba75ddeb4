package service

import (
	"context"

	"github.com/dpbandit/dpbandit/service/fault"
)

// holds returns nil if this replica still holds the lease of experiment
// key, else the 503 to answer (engine.Env.Holds): a replica whose lease
// expired while it was paused or starved serves the experiment from
// memory until its next renewal finds the lease gone, and must not
// answer meanwhile that an event its successor decided is unknown. A
// lease that expired and that nobody took yet is not held either: the
// client's retry comes back once it is renewed, or taken over.
func (p *replicas) holds(ctx context.Context, key string) error {
	h, err := p.rs.Holder(ctx, key)
	switch {
	case err != nil:
		return fault.Errorf(fault.Unavailable, "store: %v", err)
	case h.ID != p.me.ID:
		_, err = heldBy(h, true, key) // as a request that finds the lease moved: 503, to retry
	}
	return err
}
