package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// deferred reports whether a pending event of a Personalizer experiment
// waits for its activation: ranked with deferActivation and not
// activated since. Its reward is not learned
// (reason.NotActivated), and once its window passes it takes no
// default reward: it is dropped.
func (x *Experiment) deferred(rec *record) bool {
	if x.def.Surface != define.SurfacePersonalizer || rec.Status != store.Pending || rec.Reason == outcome.Activated || x.retired(rec) {
		return false
	}
	if rec.asked == 0 { // (known from its rank, else read once: it does not change)
		rec.asked = 1
		if define.DeferredActivation(rec.Context) {
			rec.asked = 2
		}
	}
	return rec.asked == 2
}

// Activate activates a deferred event (Personalizer's Activate): its
// reward is then expected, and the default reward given when none comes
// in the window. The activation is stored (the pending event's Reason,
// outcome.Activated), so that a restart keeps it. Activating an event that
// is not deferred, already activated or settled changes nothing.
func (x *Experiment) Activate(ctx context.Context, id string) error {
	durable, err := x.startActivate(id)
	if err == nil && durable != nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return err
}

func (x *Experiment) startActivate(id string) (chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return nil, x.stopped()
	}
	rec, err := x.event(id)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, x.unknown(fault.Errorf(fault.NotFound, "unknown event %q: rank first", id))
	}
	if !x.deferred(rec) {
		return rec.durable, nil
	}
	rec.Reason = outcome.Activated
	c := x.bare() // (x.change would write the last operation's draws again)
	ev := rec.Event
	c.Update, c.Durable = &ev, make(chan struct{})
	rec.durable = c.Durable
	if err := x.env.Writer.Submit(c); err != nil {
		return nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	x.last = c.Durable
	return c.Durable, nil
}
