// Package rank is the Personalizer's decision semantics over the engine
// (service/engine): a rank request's answer (the reward action first,
// the other eligible actions in the request's order, then the excluded
// ones, each with the logging policy's probability), a multi-slot rank
// (a slate: one decision per slot, each on the actions the slots before
// it left, stored under its slot's event id), a slate's rewards and
// activation by slot, the privacy unit of a rank (the experiment's
// unit_feature) and the export of the learner's model.
//
// What runs under an experiment's lock or in replay stays in the engine,
// behind a few methods (engine/rankhooks.go): a rank's decision
// (Experiment.DecideRank), the propensities of the settings a decision
// was taken under (Propensities), the lookups of stored events (Events),
// an activation (StartActivate) and the learner's released estimate,
// its settings and its last release read under the lock (Learned), of
// which Export makes the model. This package never takes the lock: the
// function it gives Events runs under it, reads only what it is given
// and must not call the experiment's methods that take it. Its errors
// are fault kinds, which service/api maps to statuses.
package rank

import (
	"context"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// Action is an action of a rank's answer with the probability that the
// logging policy chose it (0 for an excluded action).
type Action struct {
	ID          string  `json:"id"`
	Probability float64 `json:"probability"`
}

// Response is a rank's answer (Personalizer's RankResponse).
type Response struct {
	Ranking        []Action `json:"ranking"`
	EventID        string   `json:"eventId"`
	RewardActionID string   `json:"rewardActionId"`
}

// Decide takes the decision of a rank request (raw, its JSON) on x, for
// the event eventID (the request's own eventId, or one the caller drew),
// and returns once it is durable. The reward action comes first; the
// other eligible actions follow in the request's order, then the
// excluded ones with probability 0. Each eligible action's probability
// is its logged propensity (Definition.Propensity over the eligible
// actions): the chosen one's is the decision's stored PScore. The
// privacy unit is the event, or the experiment's unit_feature in the
// request's context (define.Definition.RankUnit, which DecideRank
// applies).
func Decide(ctx context.Context, x *engine.Experiment, raw []byte, eventID string) (Response, error) {
	def := x.Definition()
	if def.Surface != define.SurfacePersonalizer {
		return Response{}, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", def.ID)
	}
	ctxt, rs, err := def.ReadRankContext(raw)
	if err == nil {
		err = rs.Request.CheckNoSlot()
	}
	if err != nil {
		return Response{}, err
	}
	if rs.Request.EventID != "" {
		eventID = rs.Request.EventID
	}
	d, err := x.DecideRank(ctx, eventID, ctxt, rs)
	if err != nil {
		return Response{}, err
	}
	r := ranking(rs, d, x.Propensities(d, len(rs.Eligible)))
	return Response{EventID: eventID, RewardActionID: r[0].ID, Ranking: r}, nil
}

// ranking returns the ranking of decision d of rank rs, p the logging
// policy's propensities of its eligible actions (Propensities): the
// reward action first with d's stored propensity, the other eligible
// actions in the request's order, then the excluded ones with
// probability 0.
func ranking(rs *define.RankSet, d outcome.Decision, p []float64) []Action {
	acts := rs.Request.Actions
	out := make([]Action, 0, len(acts))
	out = append(out, Action{acts[rs.Eligible[d.Arm]].ID, d.Probability})
	for j, i := range rs.Eligible {
		if j != d.Arm {
			out = append(out, Action{acts[i].ID, p[j]})
		}
	}
	eligible := make([]bool, len(acts))
	for _, i := range rs.Eligible {
		eligible[i] = true
	}
	for i, a := range acts {
		if !eligible[i] {
			out = append(out, Action{a.ID, 0})
		}
	}
	return out
}
