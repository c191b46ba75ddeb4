package define

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/dpbandit/dpbandit/featurehash"
	"github.com/dpbandit/dpbandit/service/fault"
)

// Slates: a decision that fills several slots of a page (Personalizer's
// multi-slot rank, MultiSlotRankRequest of its v1.1-preview.3
// specification). A slate of S slots is S decisions of the experiment's
// one learner, taken in the slots' order: slot j's decision set is the
// slate's actions less the slot's own excludedActions and the actions
// that slots 0..j-1 were given, so that an action fills at most one slot.
// Each slot's decision is stored as an event of its own (SlotEventID),
// whose context is the single-slot rank request that gives its decision
// set (SlateRequest.SlotRank): its replay, its logged distribution and
// its deferred activation are those of a rank.

// MaxSlots bounds a slate's slots (Personalizer's "not more than 50
// slots").
const MaxSlots = 50

// slotSep joins a slate's event id and a slot's index into the slot's
// event id. A control character: no client id holds one (CheckID), so a
// slot's event never takes the id of another event.
const slotSep = "\x1f"

// SlotEventID is the event id of slot index j of slate event (an event
// id of at most 1,024 bytes, so at most 1,027 bytes).
func SlotEventID(event string, j int) string { return event + slotSep + strconv.Itoa(j) }

// SlateRequest is a slate's request: Personalizer's MultiSlotRankRequest.
type SlateRequest struct {
	ContextFeatures []json.RawMessage `json:"contextFeatures"`
	Actions         []RankableAction  `json:"actions"`
	Slots           []SlotRequest     `json:"slots"`
	EventID         string            `json:"eventId"`
	DeferActivation bool              `json:"deferActivation"`
}

// SlotRequest is a slot of a slate (Personalizer's SlotRequest): its id,
// its features (added to the context's for its decision), the actions it
// excludes and its baseline action (what the application would show in
// it: served in apprentice mode, Baseline).
type SlotRequest struct {
	ID              string            `json:"id"`
	Features        []json.RawMessage `json:"features"`
	ExcludedActions []string          `json:"excludedActions"`
	BaselineAction  string            `json:"baselineAction"`
}

// SlotRef marks a rank request as slot Index of a slate: the slate's
// event id, the slot's id and baseline action, and, in slot 0's only
// (which every slate decides: its own exclusions leave it an action),
// the ids of all the slate's slots in order. Only slates store it
// (SlotRank); a client's rank request that carries it is refused
// (CheckNoSlot).
type SlotRef struct {
	Event    string   `json:"event"`
	Index    int      `json:"index"`
	ID       string   `json:"id"`
	Baseline string   `json:"baselineAction"`
	IDs      []string `json:"ids,omitempty"`
}

// ReadSlate reads a slate's request and checks it whole before any
// decision, each error fault.Invalid naming its field: the context and
// the actions as ReadRank checks them (1 to 50 actions, unique ids of at
// most 256 characters, features finite and at most 4 levels deep); 1 to
// MaxSlots slots, each with an id of 1 to 256 characters unlike the
// others', features checked alike, excludedActions among the actions, at
// least one action left, and a baselineAction among the actions, not
// excluded, and unlike every other slot's.
func ReadSlate(raw []byte, bits int) (*SlateRequest, error) {
	var req SlateRequest
	if err := decodeStrict(raw, &req, "the multi-slot rank request"); err != nil {
		return nil, err
	}
	if err := checkRankID("eventId", req.EventID, true); err != nil {
		return nil, err
	}
	base, err := json.Marshal(RankRequest{ContextFeatures: req.ContextFeatures, Actions: req.Actions})
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "the multi-slot rank request is not valid: %v", err)
	}
	if _, err := ReadRank(base, bits); err != nil {
		return nil, err // contextFeatures and actions, named as in a rank
	}
	h, err := featurehash.New(bits)
	if err != nil {
		return nil, err
	}
	if n := len(req.Slots); n < 1 || n > MaxSlots {
		return nil, fault.Errorf(fault.Invalid, "slots: a multi-slot rank takes 1 to %d slots, got %d", MaxSlots, n)
	}
	index := make(map[string]int, len(req.Actions))
	for i, a := range req.Actions {
		index[a.ID] = i
	}
	slotAt := map[string]int{}
	baseAt := map[string]int{}
	scratch := make([]float64, h.Dim())
	for j, s := range req.Slots {
		name := fmt.Sprintf("slots[%d]", j)
		if err := checkRankID(name+".id", s.ID, false); err != nil {
			return nil, err
		}
		if k, dup := slotAt[s.ID]; dup {
			return nil, fault.Errorf(fault.Invalid, "%s.id: %q is also the id of slots[%d]", name, s.ID, k)
		}
		slotAt[s.ID] = j
		for k, f := range s.Features {
			if err := addFeatures(h.Reader(), scratch, f); err != nil {
				return nil, featuresError(fmt.Sprintf("%s.features[%d]", name, k), err)
			}
		}
		excluded := make([]bool, len(req.Actions))
		left := len(req.Actions)
		for k, id := range s.ExcludedActions {
			i, ok := index[id]
			if !ok {
				return nil, fault.Errorf(fault.Invalid, "%s.excludedActions[%d]: no action has id %q", name, k, id)
			}
			if !excluded[i] {
				excluded[i] = true
				left--
			}
		}
		if left == 0 {
			return nil, fault.Errorf(fault.Invalid, "%s.excludedActions: every action is excluded, none is left for the slot", name)
		}
		i, ok := index[s.BaselineAction]
		switch {
		case s.BaselineAction == "":
			return nil, fault.Errorf(fault.Invalid, "%s.baselineAction is required", name)
		case !ok:
			return nil, fault.Errorf(fault.Invalid, "%s.baselineAction: no action has id %q", name, s.BaselineAction)
		case excluded[i]:
			return nil, fault.Errorf(fault.Invalid, "%s.baselineAction: %q is among the slot's excludedActions", name, s.BaselineAction)
		}
		if k, dup := baseAt[s.BaselineAction]; dup {
			return nil, fault.Errorf(fault.Invalid, "%s.baselineAction: %q is also the baseline of slots[%d] (each slot's is its own)", name, s.BaselineAction, k)
		}
		baseAt[s.BaselineAction] = j
	}
	return &req, nil
}

// SlotRank returns the rank request of slot j of the slate of event id
// event, given the ids of the actions the slots before it were given
// (taken): the slate's context features followed by the slot's, its
// actions, the slot's excluded actions and the taken ones excluded, its
// deferActivation, and the slot's SlotRef. It returns nil when no action
// is left for the slot (the slot is then left empty: no decision).
func (s *SlateRequest) SlotRank(event string, j int, taken []string) ([]byte, error) {
	slot := s.Slots[j]
	out := slices.Clone(slot.ExcludedActions)
	for _, id := range taken {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	left := 0
	for _, a := range s.Actions {
		if !slices.Contains(out, a.ID) {
			left++
		}
	}
	if left == 0 {
		return nil, nil
	}
	req := RankRequest{
		ContextFeatures: append(slices.Clip(slices.Clone(s.ContextFeatures)), slot.Features...),
		Actions:         s.Actions,
		ExcludedActions: out,
		DeferActivation: s.DeferActivation,
		Slot:            &SlotRef{Event: event, Index: j, ID: slot.ID, Baseline: slot.BaselineAction},
	}
	if j == 0 {
		for _, o := range s.Slots {
			req.Slot.IDs = append(req.Slot.IDs, o.ID)
		}
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "slots[%d]: %v", j, err)
	}
	return raw, nil
}

// CheckClientContext is CheckContext for a client's decision: on the
// Personalizer surface, a rank request that carries a slot (SlotRef,
// which only a slate's stored slots hold) is refused.
func (d *Definition) CheckClientContext(raw json.RawMessage) (string, [][]float64, error) {
	if d.Surface != SurfacePersonalizer {
		return d.CheckContext(raw)
	}
	ctxt, rs, err := d.ReadRankContext(raw)
	if err != nil {
		return "", nil, err
	}
	if err := rs.Request.CheckNoSlot(); err != nil {
		return "", nil, err
	}
	return ctxt, rs.Set, nil
}

// CheckNoSlot refuses a client's rank request that carries a slot.
func (r *RankRequest) CheckNoSlot() error {
	if r.Slot != nil {
		return fault.Errorf(fault.Invalid, "the rank request is not valid: json: unknown field \"slot\" (a slate's slots are ranked together: multislot/rank)")
	}
	return nil
}
