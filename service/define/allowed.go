package define

import (
	"encoding/json"
	"reflect"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// What an experiment allows in its lifecycle status (Status): an active
// one decides and takes rewards, a paused one takes rewards of its
// earlier decisions but no new decision (Conflict), an archived one
// nothing (Gone).

// CheckDecide returns why the experiment takes no new decision in its
// status: Conflict while it is paused, Gone once it is archived; nil
// when it is active.
func (d *Definition) CheckDecide() error {
	switch d.Status {
	case store.Paused:
		return fault.Errorf(fault.Conflict, "experiment %q is paused: it takes rewards, not decisions (resume it)", d.ID)
	case store.Archived:
		return fault.Errorf(fault.Gone, "experiment %q is archived", d.ID)
	}
	return nil
}

// CheckReward returns why the experiment refuses reward r: Gone once it
// is archived, OutOfRange outside the declared reward_range.
func (d *Definition) CheckReward(r float64) error {
	if d.Status == store.Archived {
		return fault.Errorf(fault.Gone, "experiment %q is archived", d.ID)
	}
	if lo, hi := d.RewardRange[0], d.RewardRange[1]; !(r >= lo && r <= hi) {
		return fault.Errorf(fault.OutOfRange, "reward %v lies outside the declared reward_range [%v, %v]", r, lo, hi)
	}
	return nil
}

// Transition reports whether a move of the experiment to status to
// changes it: false for a move to the status it has (done at once: an
// archive retried after its request was cut), Conflict for a move the
// lifecycle forbids (a pause but from active, a resume but from paused;
// an archive is allowed from either).
func (d *Definition) Transition(to string) (bool, error) {
	from := d.Status
	switch {
	case from == to:
		return false, nil
	case to == store.Paused && from != store.Active, to == store.Active && from != store.Paused:
		return false, fault.Errorf(fault.Conflict, "experiment %q is %s; it cannot become %s", d.ID, from, to)
	}
	return true, nil
}

// CheckRetry returns the Conflict of a decision request for an event id
// already decided, ev, with another unit or another context: a retry
// must repeat its request. An empty ctxt is not compared (the experiment
// keeps no context); contexts are compared as JSON values (sameJSON).
func CheckRetry(ev store.Event, unit, ctxt string) error {
	switch {
	case ev.Unit != unit:
		return fault.Errorf(fault.Conflict, "event_id %q was decided for another unit_id", ev.ID)
	case ctxt != "" && !sameJSON(ev.Context, ctxt):
		return fault.Errorf(fault.Conflict, "event_id %q was decided with another context", ev.ID)
	}
	return nil
}

// sameJSON reports whether two JSON texts hold the same value (numbers
// compared as float64: 0.25 and 2.5e-1 are one number).
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
