package evaluation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
)

// eligibleOnly is a target restricted to each event's eligible actions:
// the first eligible[e.Record] of the padded K, the padding given
// probability 0.
type eligibleOnly struct {
	pol      ope.Policy
	eligible []int
}

// Probs runs the target on the event's eligible actions.
func (p eligibleOnly) Probs(e *ope.Event, out []float64) error {
	if e.Record >= len(p.eligible) {
		return fmt.Errorf("record %d is past the evaluation's %d events", e.Record, len(p.eligible))
	}
	k := p.eligible[e.Record]
	sub := *e
	if e.Actions != nil {
		sub.Actions = e.Actions[:k]
	}
	if e.Probs != nil {
		sub.Probs = e.Probs[:k]
	}
	clear(out[k:])
	return p.pol.Probs(&sub, out[:k])
}

// evalOptions are the options of an evaluation of def's log.
func evalOptions(def define.Definition) ope.Options {
	return ope.Options{
		Arms:             def.Arms,
		Clip:             Clip,
		Rewards:          &mechanism.Bounds{Lo: def.RewardRange[0], Hi: def.RewardRange[1]},
		MaxEventsPerUnit: int(def.MaxRewardsPerUnit),
	}
}

// evaluate runs ope's estimators for every target on the log in one
// pass (ope.EvaluateAll) and releases each target's IPS, SNIPS and DR
// with ope.Private, in the targets' order and evalEstimators', at the
// budget rho_e / (3 x targets) each.
func evaluate(ctx context.Context, lg *evalLog, targets []evalTarget, nz noise.Noise) (Evaluation, error) {
	def := lg.def
	res, err := evaluateRaw(ctx, lg, targets)
	if err != nil {
		return Evaluation{}, err
	}
	nonZero, err := nonZero(ctx, lg, targets)
	if err != nil {
		return Evaluation{}, err
	}
	rho := float64(def.NanoRho) / 1e9
	b, err := privacy.NewZCDP(rho)
	if err == nil {
		b, err = privacy.Split(b, len(targets)*len(strings.Fields(evalEstimators)))
	}
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Internal, "the evaluation's budget: %v", err)
	}
	o := evalOptions(def)
	ev := Evaluation{Events: res[0].Events, Slots: lg.slots, Unlogged: lg.unlogged,
		Privacy: Privacy{Rho: rho, NanoRho: def.NanoRho, Clip: o.Clip, MaxEventsPerUnit: o.MaxEventsPerUnit}}
	n := float64(res[0].Events)
	r := max(math.Abs(o.Rewards.Lo), math.Abs(o.Rewards.Hi))
	for i, t := range targets {
		pr := PolicyResult{Name: t.name, Arguments: t.args, Source: t.source, ESS: res[i].ESS, NonZero: nonZero[i]}
		for _, est := range strings.Fields(evalEstimators) {
			rel, err := ope.Private(res[i], est, b, nz)
			if err != nil {
				return Evaluation{}, fault.Errorf(fault.Internal, "the %s release of %q: %v", est, t.name, err)
			}
			pr.Releases = append(pr.Releases, rel)
		}
		sigma := pr.Releases[0].Scale
		pr.CI95 = 1.96 * math.Sqrt(o.Clip*r*r/n+sigma*sigma)
		ev.Policies = append(ev.Policies, pr)
	}
	return ev, nil
}

// evaluateRaw is ope.EvaluateAll of the targets on the log: the
// estimates before any release, which only the releases leave.
func evaluateRaw(ctx context.Context, lg *evalLog, targets []evalTarget) ([]*ope.Result, error) {
	pols := make([]ope.Policy, len(targets))
	for i, t := range targets {
		pols[i] = eligibleOnly{t.pol, lg.eligible}
	}
	open := func() (io.ReadCloser, error) { return lg.open(ctx), nil }
	res, err := ope.EvaluateAll(open, pols, evalOptions(lg.def))
	var me *ope.ModelError
	switch {
	case errors.As(err, &me):
		return nil, fault.Errorf(fault.Invalid, "%s", me.Message())
	case err != nil:
		return nil, lg.failed(err)
	}
	return res, nil
}

// nonZero counts, for each target, the events whose logged action it
// plays with a positive probability (one pass over the log).
func nonZero(ctx context.Context, lg *evalLog, targets []evalTarget) ([]int, error) {
	rc := lg.open(ctx)
	defer rc.Close()
	rd, err := ope.NewReader(rc, lg.def.Arms)
	if err != nil {
		return nil, lg.failed(err)
	}
	out := make([]int, len(targets))
	p := make([]float64, lg.def.Arms)
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, lg.failed(err)
		}
		for i, t := range targets {
			if err := (eligibleOnly{t.pol, lg.eligible}).Probs(&e, p); err != nil {
				return nil, lg.failed(err)
			}
			if p[e.Action] > 0 {
				out[i]++
			}
		}
	}
}
