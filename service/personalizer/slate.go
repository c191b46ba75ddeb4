package personalizer

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/rank"
)

// Personalizer's v1.1-preview.3 multi-slot routes (its specification,
// preview/v1.1-preview.3/Personalizer.json of Azure/azure-rest-api-specs):
// rank, reward and activate, on package rank's slates (rank/slate.go).

// multiSlot adds the multi-slot routes.
func multiSlot(routes map[string]Handler) {
	routes["POST "+PreviewBase+"/multislot/rank"] = handleMultiSlotRank
	routes["POST "+PreviewBase+"/multislot/events/{eventId}/reward"] = handleMultiSlotReward
	routes["POST "+PreviewBase+"/multislot/events/{eventId}/activate"] = handleMultiSlotActivate
}

// slotResponse and multiSlotRankResponse are the specification's
// SlotResponse and MultiSlotRankResponse.
type slotResponse struct {
	ID             string `json:"id"`
	RewardActionID string `json:"rewardActionId,omitempty"`
}

type multiSlotRankResponse struct {
	Slots   []slotResponse `json:"slots"`
	EventID string         `json:"eventId"`
}

// handleMultiSlotRank is MultiSlot_Rank: 201 with each slot's action (a
// slot the slots before it left no action has no rewardActionId).
func handleMultiSlotRank(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := media.ReadJSON(r)
	if err != nil {
		return 0, nil, err
	}
	s, err := rank.MultiSlot(r.Context(), x, raw, rand.Text())
	if err != nil {
		return 0, nil, err
	}
	out := multiSlotRankResponse{EventID: s.EventID, Slots: make([]slotResponse, len(s.Slots))}
	for j, sl := range s.Slots {
		out.Slots[j] = slotResponse{ID: sl.ID, RewardActionID: sl.ActionID}
	}
	return 201, out, nil
}

// multiSlotRewardRequest is the specification's MultiSlotRewardRequest.
type multiSlotRewardRequest struct {
	Reward []struct {
		SlotID *string  `json:"slotId"`
		Value  *float64 `json:"value"`
	} `json:"reward"`
}

// handleMultiSlotReward is MultiSlotEvents_Reward: 204. The whole body is
// checked before any reward is applied (every slotId a slot of the event
// that was given an action, every value in [0, 1]); a slot's reward is
// then its event's, as handleReward's (the earliest counts; one that
// comes after the slot was settled is acknowledged and not learned).
func handleMultiSlotReward(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := media.ReadJSON(r)
	if err != nil {
		return 0, nil, err
	}
	var req multiSlotRewardRequest
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
	ids, err := rank.SlotEvents(x, event, slots, func(i int) string { return fmt.Sprintf("reward[%d].slotId", i) })
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
	return 204, nil, x.Wait(r.Context(), durable...)
}

// handleMultiSlotActivate is MultiSlotEvents_Activate: 204.
func handleMultiSlotActivate(r *http.Request, x *engine.Experiment) (int, any, error) {
	return 204, nil, rank.ActivateSlate(r.Context(), x, r.PathValue("eventId"))
}
