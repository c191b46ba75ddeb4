package engine

import (
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
)

// noSlot returns the answer to a reward for event id id, which names no
// event of its own: Invalid when id is a slate's event (its slots'
// events are stored under define.SlotEventID, so the slate's id itself
// names none, and a reward without a slot found nothing and answered
// 404 "decide first" for an event the client had decided), else nil.
// The caller holds x.mu.
func (x *Experiment) noSlot(id string) error {
	if x.def.Surface != define.SurfacePersonalizer {
		return nil
	}
	if rec, err := x.event(define.SlotEventID(id, 0)); err != nil {
		return err
	} else if rec != nil {
		return fault.Errorf(fault.Invalid, "slot: event %q is a slate: each of its rewards names its slot", id)
	}
	return nil
}
