package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Reasons of the Personalizer surface.
const (
	// reasonActivated marks, in a pending event's Reason, a deferred
	// event that Activate activated (stored by an update of the event).
	reasonActivated = "activated"
	// reasonNotActivated is why the reward of a deferred event that was
	// never activated is not learned.
	reasonNotActivated = "not_activated"
)

// RankedAction is an action of a rank's answer with the probability that
// the logging policy chose it (0 for an excluded action).
type RankedAction struct {
	ID          string  `json:"id"`
	Probability float64 `json:"probability"`
}

// RankResponse is a rank's answer (Personalizer's RankResponse).
type RankResponse struct {
	Ranking        []RankedAction `json:"ranking"`
	EventID        string         `json:"eventId"`
	RewardActionID string         `json:"rewardActionId"`
}

// Rank takes the decision of a rank request (raw, its JSON), for the event
// eventID (the request's own eventId, or one the caller drew), and
// returns once it is durable. The reward action comes first; the other
// eligible actions follow in the request's order, then the excluded ones
// with probability 0. Each eligible action's probability is its logged
// propensity (Definition.Propensity over the eligible actions): the
// chosen one's is the decision's stored PScore. The privacy unit is the
// event, or the experiment's unit_feature in the request's context
// (rankUnit).
func (x *Experiment) Rank(ctx context.Context, raw []byte, eventID string) (RankResponse, error) {
	if x.def.Surface != define.SurfacePersonalizer {
		return RankResponse{}, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", x.def.ID)
	}
	ctxt, rs, err := x.def.ReadRankContext(raw)
	if err == nil {
		err = rs.Request.CheckNoSlot()
	}
	if err != nil {
		return RankResponse{}, err
	}
	if rs.Request.EventID != "" {
		eventID = rs.Request.EventID
	}
	unit, err := x.rankUnit(rs.Request.ContextFeatures, eventID)
	if err != nil {
		return RankResponse{}, err
	}
	d, err := x.decide(ctx, eventID, unit, ctxt, &rankFacts{shared: rs.Shared, deferred: rs.Request.DeferActivation}, rs.Set)
	if err != nil {
		return RankResponse{}, err
	}
	ranking := x.ranking(rs, d)
	return RankResponse{EventID: eventID, RewardActionID: ranking[0].ID, Ranking: ranking}, nil
}

// ranking returns the ranking of decision d of rank rs: the reward
// action first, the other eligible actions in the request's order, then
// the excluded ones with probability 0.
func (x *Experiment) ranking(rs *define.RankSet, d Decision) []RankedAction {
	k := len(rs.Eligible)
	acts := rs.Request.Actions
	out := make([]RankedAction, 0, len(acts))
	out = append(out, RankedAction{acts[rs.Eligible[d.Arm]].ID, d.Probability})
	at := x.definitionAt(d.seq) // the exploration it was decided under (settings.go)
	for j, i := range rs.Eligible {
		if j != d.Arm {
			out = append(out, RankedAction{acts[i].ID, at.PropensityOf(j, d.policyArm, k)})
		}
	}
	eligible := make([]bool, len(acts))
	for _, i := range rs.Eligible {
		eligible[i] = true
	}
	for i, a := range acts {
		if !eligible[i] {
			out = append(out, RankedAction{a.ID, 0})
		}
	}
	return out
}

// deferred reports whether a pending event of a Personalizer experiment
// waits for its activation: ranked with deferActivation and not
// activated since. Its reward is not learned (reasonNotActivated), and
// once its window passes it takes no default reward: it is dropped.
func (x *Experiment) deferred(rec *record) bool {
	if x.def.Surface != define.SurfacePersonalizer || rec.Status != store.Pending || rec.Reason == reasonActivated || x.retired(rec) {
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
// reasonActivated), so that a restart keeps it. Activating an event that
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
	rec.Reason = reasonActivated
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
