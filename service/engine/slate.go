package engine

import (
	"context"
	"encoding/json"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
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

// SlotDecision is a slot's part of a slate's answer: the slot's id, the
// action it is given (none when the slots before it took every action it
// could take), the probability that the logging policy gave it that
// action (the stored propensity), and its ranking (Rank's order; the
// actions excluded from the slot, by its request or by the slots before
// it, at probability 0).
type SlotDecision struct {
	ID          string         `json:"id"`
	ActionID    string         `json:"action_id,omitempty"`
	Probability float64        `json:"probability,omitempty"`
	Learns      bool           `json:"learns"`
	Ranking     []RankedAction `json:"ranking,omitempty"`
}

// Slate is a slate's answer.
type Slate struct {
	EventID string         `json:"event_id"`
	Slots   []SlotDecision `json:"slots"`
}

// MultiSlotRank takes the decisions of a Personalizer multi-slot rank
// request raw for the event of its eventId, or eventID when it has none
// (one the caller drew). The privacy unit of all its slots is the event,
// or the experiment's unit_feature in the request's context (rankUnit).
func (x *Experiment) MultiSlotRank(ctx context.Context, raw []byte, eventID string) (Slate, error) {
	req, err := x.readSlate(raw)
	if err != nil {
		return Slate{}, err
	}
	if req.EventID != "" {
		eventID = req.EventID
	}
	unit, err := x.rankUnit(req.ContextFeatures, eventID)
	if err != nil {
		return Slate{}, err
	}
	return x.decideSlate(ctx, req, eventID, unit)
}

// DecideSlate takes the decisions of a slate (raw, a multi-slot rank
// request, whose eventId is absent or equal to eventID) for unit.
func (x *Experiment) DecideSlate(ctx context.Context, eventID, unit string, raw []byte) (Slate, error) {
	req, err := x.readSlate(raw)
	if err != nil {
		return Slate{}, err
	}
	if req.EventID != "" && req.EventID != eventID {
		return Slate{}, fault.Errorf(fault.Invalid, "context.eventId %q differs from event_id %q", req.EventID, eventID)
	}
	if err := x.checkGivenUnit(unit, req.ContextFeatures); err != nil {
		return Slate{}, err
	}
	return x.decideSlate(ctx, req, eventID, unit)
}

func (x *Experiment) readSlate(raw []byte) (*define.SlateRequest, error) {
	if x.def.Surface != define.SurfacePersonalizer {
		return nil, fault.Errorf(fault.Invalid, "experiment %q takes no slates: slates rank actions with ids, on a personalizer experiment", x.def.ID)
	}
	return define.ReadSlate(raw, x.def.HashBits)
}

// decideSlate decides the slots of req in order and returns once they
// are durable.
func (x *Experiment) decideSlate(ctx context.Context, req *define.SlateRequest, eventID, unit string) (Slate, error) {
	if err := define.CheckID("eventId", eventID); err != nil {
		return Slate{}, err
	}
	out := Slate{EventID: eventID, Slots: make([]SlotDecision, len(req.Slots))}
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
		ctxt, rs, err := x.def.ReadRankContext(raw)
		if err != nil {
			return Slate{}, fault.Errorf(fault.Of(err), "slots[%d]: %v", j, err)
		}
		d, done, err := x.StartDecide(define.SlotEventID(eventID, j), unit, ctxt, rs.Set)
		if fault.Of(err) == fault.Conflict && x.known(define.SlotEventID(eventID, j)) {
			// (a slot decided before: not a paused experiment's refusal)
			return Slate{}, fault.Errorf(fault.Conflict, "eventId %q was ranked with another request or for another unit (slot %q)", eventID, slot.ID)
		}
		if err != nil {
			return Slate{}, err
		}
		ranking := x.ranking(rs, d)
		taken = append(taken, ranking[0].ID)
		out.Slots[j] = SlotDecision{ID: slot.ID, ActionID: ranking[0].ID, Probability: d.Probability, Learns: d.Learns, Ranking: ranking}
		durable = append(durable, done)
	}
	if err := x.Wait(ctx, durable); err != nil {
		return Slate{}, err
	}
	return out, nil
}

// known reports whether an event of id id was decided.
func (x *Experiment) known(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	rec, err := x.event(id)
	return err == nil && rec != nil
}

// slate returns the ids of the slots of the slate of event id event,
// in order (NotFound when there is none). The caller holds x.mu.
func (x *Experiment) slate(event string) ([]string, error) {
	if x.def.Surface != define.SurfacePersonalizer {
		return nil, fault.Errorf(fault.Invalid, "experiment %q takes no slates", x.def.ID)
	}
	if err := define.CheckID("eventId", event); err != nil {
		return nil, err
	}
	if x.failed != nil {
		return nil, x.stopped()
	}
	first, err := x.event(define.SlotEventID(event, 0))
	if err != nil {
		return nil, err
	}
	var req define.RankRequest
	if first == nil || json.Unmarshal([]byte(first.Context), &req) != nil || req.Slot == nil {
		err := fault.Errorf(fault.NotFound, "unknown multi-slot event %q: rank it first (multislot/rank)", event)
		if first == nil {
			err = x.unknown(err)
		}
		return nil, err
	}
	return req.Slot.IDs, nil
}

// SlotEvents checks, before any reward is applied, that slots are slots
// of the slate of event id event that were given an action, and returns
// their events' ids: NotFound when there is no such slate, Invalid
// (naming field(i) for slots[i]) for a slot it does not have or left
// empty.
func (x *Experiment) SlotEvents(event string, slots []string, field func(i int) string) ([]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	all, err := x.slate(event)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(all))
	for j, id := range all {
		index[id] = j
	}
	ids := make([]string, len(slots))
	for i, s := range slots {
		j, ok := index[s]
		if !ok {
			return nil, fault.Errorf(fault.Invalid, "%s: event %q has no slot %q", field(i), event, s)
		}
		ids[i] = define.SlotEventID(event, j)
		if rec, err := x.event(ids[i]); err != nil {
			return nil, err
		} else if rec == nil {
			return nil, fault.Errorf(fault.Invalid, "%s: slot %q of event %q was given no action (the slots before it took every action it could take)", field(i), s, event)
		}
	}
	return ids, nil
}

// RewardSlot records the reward r of slot slot of the slate of event id
// event and returns once it is durable; its answer names the slate's
// event and the slot.
func (x *Experiment) RewardSlot(ctx context.Context, event, slot string, r float64) (RewardResult, error) {
	ids, err := x.SlotEvents(event, []string{slot}, func(int) string { return "slot" })
	if err != nil {
		return RewardResult{}, err
	}
	res, err := x.Reward(ctx, ids[0], r)
	res.EventID, res.Slot = event, slot
	return res, err
}

// ActivateSlate activates a deferred slate (Personalizer's multi-slot
// Activate): each of its slots that was given an action, as Activate.
func (x *Experiment) ActivateSlate(ctx context.Context, event string) error {
	x.mu.Lock()
	all, err := x.slate(event)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	var durable []chan struct{}
	for j := range all {
		done, err := x.startActivate(define.SlotEventID(event, j))
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
	return x.Wait(ctx, durable)
}

// Wait returns once the changes of the given channels (StartReward's,
// StartDecide's) are durable.
func (x *Experiment) Wait(ctx context.Context, durable []chan struct{}) error {
	for _, c := range durable {
		if err := x.env.Writer.Wait(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
