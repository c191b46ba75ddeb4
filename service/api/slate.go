package api

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
)

// Slates on both surfaces (engine/slate.go): the native
// POST /v1/experiments/{id}/slates, and Personalizer's v1.1-preview.3
// routes (its specification, preview/v1.1-preview.3/Personalizer.json of
// Azure/azure-rest-api-specs): multislot rank, reward and activate, and
// the single-slot rank, reward and activate, which are v1.0's under
// another prefix.

// personalizerPreview is the v1.1-preview.3 API's base path.
const personalizerPreview = "/personalizer/v1.1-preview.3"

// slateRoutes returns the v1.1-preview.3 routes, for personalizerRoutes.
func (a *server) slateRoutes() map[string]pzHandler {
	return map[string]pzHandler{
		"POST " + personalizerPreview + "/rank":                                a.handleRank,
		"POST " + personalizerPreview + "/events/{eventId}/reward":             a.handlePzReward,
		"POST " + personalizerPreview + "/events/{eventId}/activate":           a.handleActivate,
		"POST " + personalizerPreview + "/multislot/rank":                      a.handleMultiSlotRank,
		"POST " + personalizerPreview + "/multislot/events/{eventId}/reward":   a.handleMultiSlotReward,
		"POST " + personalizerPreview + "/multislot/events/{eventId}/activate": a.handleMultiSlotActivate,
	}
}

// pzSlotResponse and pzMultiSlotRankResponse are the specification's
// SlotResponse and MultiSlotRankResponse.
type pzSlotResponse struct {
	ID             string `json:"id"`
	RewardActionID string `json:"rewardActionId,omitempty"`
}

type pzMultiSlotRankResponse struct {
	Slots   []pzSlotResponse `json:"slots"`
	EventID string           `json:"eventId"`
}

// handleMultiSlotRank is MultiSlot_Rank: 201 with each slot's action (a
// slot the slots before it left no action has no rewardActionId).
func (a *server) handleMultiSlotRank(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	s, err := x.MultiSlotRank(r.Context(), raw, rand.Text())
	if err != nil {
		return 0, nil, err
	}
	out := pzMultiSlotRankResponse{EventID: s.EventID, Slots: make([]pzSlotResponse, len(s.Slots))}
	for j, sl := range s.Slots {
		out.Slots[j] = pzSlotResponse{ID: sl.ID, RewardActionID: sl.ActionID}
	}
	return 201, out, nil
}

// pzMultiSlotReward is the specification's MultiSlotRewardRequest.
type pzMultiSlotReward struct {
	Reward []struct {
		SlotID *string  `json:"slotId"`
		Value  *float64 `json:"value"`
	} `json:"reward"`
}

// handleMultiSlotReward is MultiSlotEvents_Reward: 204. The whole body is
// checked before any reward is applied (every slotId a slot of the event
// that was given an action, every value in [0, 1]); a slot's reward is
// then its event's, as handlePzReward's (the earliest counts; one that
// comes after the slot was settled is acknowledged and not learned).
func (a *server) handleMultiSlotReward(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	var req pzMultiSlotReward
	if err := define.DecodePz(raw, &req, "the multi-slot reward request"); err != nil {
		return 0, nil, err
	}
	if req.Reward == nil {
		return 0, nil, fault.Errorf(fault.Invalid, "reward is required: a list of {slotId, value}")
	}
	event := r.PathValue("eventId")
	if err := define.CheckID("eventId", event); err != nil {
		return 0, nil, err
	}
	rr := x.Definition().RewardRange
	slots := make([]string, len(req.Reward))
	for i, q := range req.Reward {
		switch {
		case q.SlotID == nil || *q.SlotID == "":
			return 0, nil, fault.Errorf(fault.Invalid, "reward[%d].slotId is required", i)
		case utf8.RuneCountInString(*q.SlotID) > 256:
			return 0, nil, fault.Errorf(fault.Invalid, "reward[%d].slotId has more than 256 characters", i)
		case q.Value == nil:
			return 0, nil, fault.Errorf(fault.Invalid, "reward[%d].value is required", i)
		case !(*q.Value >= rr[0] && *q.Value <= rr[1]):
			return 0, nil, fault.Errorf(fault.Invalid, "reward[%d].value %v lies outside the reward range [%v, %v]", i, *q.Value, rr[0], rr[1])
		}
		slots[i] = *q.SlotID
	}
	ids, err := x.SlotEvents(event, slots, func(i int) string { return fmt.Sprintf("reward[%d].slotId", i) })
	if err != nil {
		return 0, nil, err
	}
	var durable []chan struct{}
	for i, id := range ids {
		_, done, err := x.StartReward(id, *req.Reward[i].Value)
		if fault.Of(err) == fault.Conflict {
			continue // settled without it: acknowledged, not learned
		}
		if err != nil {
			return 0, nil, err
		}
		durable = append(durable, done)
	}
	return 204, nil, x.Wait(r.Context(), durable)
}

// handleMultiSlotActivate is MultiSlotEvents_Activate: 204.
func (a *server) handleMultiSlotActivate(r *http.Request, x *engine.Experiment) (int, any, error) {
	return 204, nil, x.ActivateSlate(r.Context(), r.PathValue("eventId"))
}

// handleSlate is the native POST /v1/experiments/{id}/slates: a slate's
// decisions for event_id and unit_id, context a multi-slot rank request.
func (a *server) handleSlate(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, req, err := a.readDecide(w, r, t)
	if err != nil {
		return nil, err
	}
	if len(req.Context) == 0 || string(req.Context) == "null" {
		return nil, fault.Errorf(fault.Invalid, "context is required: a multi-slot rank request (docs/service.md, slates)")
	}
	return x.DecideSlate(r.Context(), req.EventID, req.UnitID, req.Context)
}
