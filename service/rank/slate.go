package rank

import (
	"context"
	"encoding/json"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// Slates: one event that fills several slots (define/slate.go). Slot j is
// a decision of its own, taken after slots 0..j-1 on the actions they
// left (an action fills at most one slot), stored as event
// define.SlotEventID(event, j) with the single-slot rank that gives its
// decision set as context. Each slot's reward is its own: it is learned
// as its own observation, with the slot's own propensity (over the
// actions left to it), by the experiment's one learner, and debited to
// the slate's unit like any reward (the k-th learned reward of a unit
// costs (2k-1) rho: define.Debit). Deferred activation and exclusions are
// those of each slot's rank; activating a slate activates its slots.
//
// Crash safety is every decision's: each slot's decision is submitted to
// the group-commit writer in order and the slate is answered once all are
// durable. A crash before that may leave the first slots stored and not
// the others; the retried slate (same event id and body) then finds them
// and decides the rest, and a slate never retried holds slots that take
// the default reward (or none, when deferred) as any unanswered decision.

// Slot is a slot's part of a slate's answer: the slot's id, the action
// it is given (none when the slots before it took every action it could
// take), the probability that the logging policy gave it that action
// (the stored propensity), and its ranking (Decide's order; the actions
// excluded from the slot, by its request or by the slots before it, at
// probability 0).
type Slot struct {
	ID          string   `json:"id"`
	ActionID    string   `json:"action_id,omitempty"`
	Probability float64  `json:"probability,omitempty"`
	Learns      bool     `json:"learns"`
	Ranking     []Action `json:"ranking,omitempty"`
}

// Slate is a slate's answer.
type Slate struct {
	EventID string `json:"event_id"`
	Slots   []Slot `json:"slots"`
}

// MultiSlot takes the decisions of a Personalizer multi-slot rank
// request raw on x for the event of its eventId, or eventID when it has
// none (one the caller drew). The privacy unit of all its slots is the
// event, or the experiment's unit_feature in the request's context
// (define.Definition.RankUnit).
func MultiSlot(ctx context.Context, x *engine.Experiment, raw []byte, eventID string) (Slate, error) {
	def := x.Definition()
	req, err := readSlate(&def, raw)
	if err != nil {
		return Slate{}, err
	}
	if req.EventID != "" {
		eventID = req.EventID
	}
	unit, err := def.RankUnit(req.ContextFeatures, eventID)
	if err != nil {
		return Slate{}, err
	}
	return decideSlate(ctx, x, &def, req, eventID, unit)
}

// DecideSlate takes the decisions of a slate on x (raw, a multi-slot
// rank request, whose eventId is absent or equal to eventID) for unit
// (the native /v1 slates).
func DecideSlate(ctx context.Context, x *engine.Experiment, eventID, unit string, raw []byte) (Slate, error) {
	def := x.Definition()
	req, err := readSlate(&def, raw)
	if err != nil {
		return Slate{}, err
	}
	if req.EventID != "" && req.EventID != eventID {
		return Slate{}, fault.Errorf(fault.Invalid, "context.eventId %q differs from event_id %q", req.EventID, eventID)
	}
	if err := def.CheckRankUnit(unit, req.ContextFeatures); err != nil {
		return Slate{}, err
	}
	return decideSlate(ctx, x, &def, req, eventID, unit)
}

func readSlate(def *define.Definition, raw []byte) (*define.SlateRequest, error) {
	if def.Surface != define.SurfacePersonalizer {
		return nil, fault.Errorf(fault.Invalid, "experiment %q takes no slates: slates rank actions with ids, on a personalizer experiment", def.ID)
	}
	return define.ReadSlate(raw, def.HashBits)
}

// decideSlate decides the slots of req in order and returns once they
// are durable.
func decideSlate(ctx context.Context, x *engine.Experiment, def *define.Definition, req *define.SlateRequest, eventID, unit string) (Slate, error) {
	if err := define.CheckID("eventId", eventID); err != nil {
		return Slate{}, err
	}
	out := Slate{EventID: eventID, Slots: make([]Slot, len(req.Slots))}
	var taken []string
	var durable []chan struct{}
	for j, slot := range req.Slots {
		out.Slots[j].ID = slot.ID
		raw, err := req.SlotRank(eventID, j, taken)
		if err != nil {
			return Slate{}, err
		}
		if raw == nil {
			continue // the slots before took every action this one could take
		}
		ctxt, rs, err := def.ReadRankContext(raw)
		if err != nil {
			return Slate{}, fault.Errorf(fault.Of(err), "slots[%d]: %v", j, err)
		}
		id := define.SlotEventID(eventID, j)
		d, done, err := x.StartDecide(id, unit, ctxt, rs.Set)
		if fault.Of(err) == fault.Conflict && known(x, id) {
			// (a slot decided before: not a paused experiment's refusal)
			return Slate{}, fault.Errorf(fault.Conflict, "eventId %q was ranked with another request or for another unit (slot %q)", eventID, slot.ID)
		}
		if err != nil {
			return Slate{}, err
		}
		r := ranking(rs, d, x.Propensities(d, len(rs.Eligible)))
		taken = append(taken, r[0].ID)
		out.Slots[j] = Slot{ID: slot.ID, ActionID: r[0].ID, Probability: d.Probability, Learns: d.Learns, Ranking: r}
		durable = append(durable, done)
	}
	if err := x.Wait(ctx, durable...); err != nil {
		return Slate{}, err
	}
	return out, nil
}

// lookup is Experiment.Events' lookup of an event by id.
type lookup = func(id string) (*store.Event, error)

// known reports whether x decided an event of id id.
func known(x *engine.Experiment, id string) bool {
	found := false
	err := x.Events(func(get lookup) error {
		ev, err := get(id)
		found = ev != nil
		return err
	})
	return err == nil && found
}

// slotIDs returns, under x's lock (get is Experiment.Events' lookup),
// the ids of the slots of the slate of event id slate, in order:
// NotFound when there is none (once x is sure it would know it,
// Experiment.Unknown, when no event of its first slot exists).
func slotIDs(x *engine.Experiment, get lookup, slate string) ([]string, error) {
	first, err := get(define.SlotEventID(slate, 0))
	if err != nil {
		return nil, err
	}
	var req define.RankRequest
	if first == nil || json.Unmarshal([]byte(first.Context), &req) != nil || req.Slot == nil {
		err := fault.Errorf(fault.NotFound, "unknown multi-slot event %q: rank it first (multislot/rank)", slate)
		if first == nil {
			err = x.Unknown(err)
		}
		return nil, err
	}
	return req.Slot.IDs, nil
}

// withSlate runs f under x's lock (Experiment.Events) with the ids of
// the slots of the slate of event id event (slotIDs), once the id is
// checked.
func withSlate(x *engine.Experiment, event string, f func(get lookup, ids []string) error) error {
	if def := x.Definition(); def.Surface != define.SurfacePersonalizer {
		return fault.Errorf(fault.Invalid, "experiment %q takes no slates", def.ID)
	}
	if err := define.CheckID("eventId", event); err != nil {
		return err
	}
	return x.Events(func(get lookup) error {
		ids, err := slotIDs(x, get, event)
		if err != nil {
			return err
		}
		return f(get, ids)
	})
}

// SlotEvents checks, before any reward is applied, that slots are slots
// of the slate of event id event on x that were given an action, and
// returns their events' ids: NotFound when there is no such slate,
// Invalid (naming field(i) for slots[i]) for a slot it does not have or
// left empty.
func SlotEvents(x *engine.Experiment, event string, slots []string, field func(i int) string) ([]string, error) {
	ids := make([]string, len(slots))
	err := withSlate(x, event, func(get lookup, all []string) error {
		index := make(map[string]int, len(all))
		for j, id := range all {
			index[id] = j
		}
		for i, s := range slots {
			j, ok := index[s]
			if !ok {
				return fault.Errorf(fault.Invalid, "%s: event %q has no slot %q", field(i), event, s)
			}
			ids[i] = define.SlotEventID(event, j)
			if ev, err := get(ids[i]); err != nil {
				return err
			} else if ev == nil {
				return fault.Errorf(fault.Invalid, "%s: slot %q of event %q was given no action (the slots before it took every action it could take)", field(i), s, event)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// RewardSlot records the reward r of slot slot of the slate of event id
// event on x and returns once it is durable; its answer names the
// slate's event and the slot.
func RewardSlot(ctx context.Context, x *engine.Experiment, event, slot string, r float64) (outcome.RewardResult, error) {
	ids, err := SlotEvents(x, event, []string{slot}, func(int) string { return "slot" })
	if err != nil {
		return outcome.RewardResult{}, err
	}
	res, err := x.Reward(ctx, ids[0], r)
	res.EventID, res.Slot = event, slot
	return res, err
}

// ActivateSlate activates a deferred slate on x (Personalizer's
// multi-slot Activate): each of its slots that was given an action, as
// Experiment.Activate.
func ActivateSlate(ctx context.Context, x *engine.Experiment, event string) error {
	var n int
	err := withSlate(x, event, func(_ lookup, all []string) error {
		n = len(all)
		return nil
	})
	if err != nil {
		return err
	}
	var durable []chan struct{}
	for j := range n {
		done, err := x.StartActivate(define.SlotEventID(event, j))
		if fault.Of(err) == fault.NotFound {
			continue // a slot left empty
		}
		if err != nil {
			return err
		}
		if done != nil {
			durable = append(durable, done)
		}
	}
	return x.Wait(ctx, durable...)
}
