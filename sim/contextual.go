package sim

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// ContextualEntry is one contextual policy of an experiment.
type ContextualEntry = Of[contextual.Setting, contextual.Policy]

// ContextualConfig describes a contextual simulation.
type ContextualConfig struct {
	Env env.Contexts
	Steps
}

// RunContextual simulates contextual policies one step at a time (decision
// sets change every step, so there are no plans to batch). In run i every
// policy faces the same decision sets and the same reward noise. Regret
// at step t is max_a <theta*, a> - <theta*, a_t> over the step's decision
// set (seed 001, Section IV-B).
func RunContextual(ctx context.Context, cfg ContextualConfig, entries []ContextualEntry) (*Result, error) {
	if cfg.Env == nil {
		return nil, errorf("no environment")
	}
	cal := &mechanism.Calibrations{} // shared by the runs
	return stepwise(ctx, &cfg.Steps, len(entries), func(ctx context.Context, run uint64, rec *record) error {
		return runContextual(ctx, &cfg, entries, run, rec, cal)
	})
}

// stepwise validates a step-by-step simulation, fills the default
// checkpoints, and runs one(run) for every run; a run plays all entries
// together, so its time is shared equally among them.
func stepwise(ctx context.Context, s *Steps, entries int, one func(ctx context.Context, run uint64, rec *record) error) (*Result, error) {
	if err := s.prepare(entries); err != nil {
		return nil, err
	}
	now := s.Now
	return parallel(ctx, s.Runs, s.Shard, s.Workers, entries, s.Checkpoints, s.Progress,
		func(ctx context.Context, run uint64, rec *record) error {
			start := now()
			err := one(ctx, run, rec)
			for j := range entries {
				rec.seconds[j] = now().Sub(start).Seconds() / float64(entries)
			}
			return err
		})
}

// runContextual plays one run of every entry, step by step: each decision
// set (and its best value) is drawn once and served to every policy, which
// is both the common-random-numbers pairing and a saving, context
// generation being a large part of a step's cost. The run's time is
// shared equally among the entries.
func runContextual(ctx context.Context, cfg *ContextualConfig, entries []ContextualEntry, run uint64, rec *record, cal *mechanism.Calibrations) error {
	ps := make([]contextual.Policy, len(entries))
	for j, e := range entries {
		nz := privacyNoise(cfg.Secure, cfg.Seed, run, e.NoiseKey)
		p, err := e.New(contextual.Setting{Dim: cfg.Env.Dim(), Horizon: cfg.Horizon, Bounds: cfg.Env.Bounds(), Noise: nz,
			Rand: noise.Stream(cfg.Seed, run, tagPolicy, e.NoiseKey), Calibrations: cal})
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		ps[j] = p
		rec.entries[j].Regret = make([]float64, len(cfg.Checkpoints))
	}
	cr := cfg.Env.NewRun(cfg.Seed, run)
	ck := cfg.Checkpoints
	reg := make([]float64, len(entries))
	got := make([]float64, len(entries)) // sum of the chosen actions' mean rewards
	ci := 0
	done := ctx.Done()
	// With a delay every policy decides through contextual.Delayed, and
	// its learning rewards wait in a queue of its own; every decision
	// draws its reward, so that the entries stay paired.
	var ds []*contextual.Delayed
	var qs []arrivals
	dr := noise.Stream(cfg.Seed, run, tagPolicy+3)
	if !cfg.Delay.IsZero() {
		for j, p := range ps {
			dp, ok := p.(contextual.Concurrent)
			if !ok {
				return fmt.Errorf("%s cannot decide while a reward is pending (no delay for it)", entries[j].Name)
			}
			if cfg.Delay.Late {
				ds = append(ds, contextual.NewDelayedLate(dp))
			} else {
				ds = append(ds, contextual.NewDelayed(dp))
			}
		}
		qs = make([]arrivals, len(ps))
	}
	for t := int64(1); t <= cfg.Horizon; t++ {
		// Every step: a step can be slow (large d or N).
		if err := interrupted(ctx, done); err != nil {
			return err
		}
		acts := cr.Next()
		best := math.Inf(-1)
		for k := range acts {
			best = max(best, cr.Value(k))
		}
		lag, lost := int64(0), false
		if ds != nil {
			lag = cfg.Delay.draw(dr)
			lost = cfg.Delay.missed(dr)
		}
		for j, p := range ps {
			var err error
			k := -1
			var tk bandit.Ticket
			if ds != nil {
				tk, err = cfg.Delay.decide(ds[j], &qs[j], t, acts)
				k = tk.Arm
			} else {
				k, err = p.Choose(acts)
			}
			if err == nil && (k < 0 || k >= len(acts)) {
				err = errorf("action %d of %d", k, len(acts))
			}
			if err == nil {
				v := cr.Value(k)
				reg[j] += best - v
				got[j] += v
				r := cr.Reward(k)
				switch {
				case ds == nil:
					err = p.Update(r)
				case cfg.Delay.Late && tk.Learns() && (lost || lag >= cfg.Delay.window()):
					// its reward does not come in the window: settled at its end
					heap.Push(&qs[j], arrival{at: t + cfg.Delay.window(), seq: t, ticket: tk, expires: true})
				case (tk.Learns() || cfg.Delay.Miss > 0) && !lost: // overflow rewards come too (Delayed.Seen), when rewards can be missing
					heap.Push(&qs[j], arrival{at: t + 1 + lag, seq: t, ticket: tk, reward: r})
				}
			}
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", entries[j].Name, run, err)
			}
		}
		for ci < len(ck) && ck[ci] == t {
			for j := range entries {
				rec.entries[j].Regret[ci] = reg[j]
			}
			ci++
		}
	}
	recordContextual(rec, ps, cfg, got)
	return nil
}

// SupportMetrics measures an estimated support against the true one:
// "support_recall", the fraction of the true non-zeros it holds (1 when
// there are none), and "support_size", its size.
func SupportMetrics(est, truth []int) map[string]float64 {
	hit := 0
	for _, j := range truth {
		if slices.Contains(est, j) {
			hit++
		}
	}
	recall := 1.0
	if len(truth) > 0 {
		recall = float64(hit) / float64(len(truth))
	}
	return map[string]float64{"support_recall": recall, "support_size": float64(len(est))}
}

// decide is a delayed policy's decision at step t: the rewards due by t
// (in q) arrive at d, d decides on the decision set acts, and the
// decisions whose window passed are settled (their default reward, or
// dropped): under the default rule as soon as they are overdue, under
// the late rule (Delay.Late) at their window's end.
func (dl Delay) decide(d *contextual.Delayed, q *arrivals, t int64, acts [][]float64) (bandit.Ticket, error) {
	drop := func(t bandit.Ticket, _ float64) error { return d.Drop(t) }
	for len(*q) > 0 && (*q)[0].at <= t {
		a := heap.Pop(q).(arrival)
		var err error
		if a.expires { // (the late rule only)
			err = dl.late([]bandit.Ticket{a.ticket}, d.Default, drop)
		} else {
			err = arrive(d.Reward, d.Seen, a)
		}
		if err != nil {
			return bandit.Ticket{Arm: -1}, err
		}
	}
	tk, err := d.Decide(acts)
	if err != nil {
		return tk, err
	}
	return tk, dl.late(d.Overdue(), d.Default, drop)
}

// recordContextual records a finished run's per-policy measures: episodes,
// the support's recovery for sparse policies, and on a data set the loss
// of progressive validation (got holds each policy's sum of the chosen
// actions' mean rewards).
func recordContextual(rec *record, ps []contextual.Policy, cfg *ContextualConfig, got []float64) {
	for j, p := range ps {
		if ep, ok := p.(interface{ Episodes() int64 }); ok {
			rec.entries[j].Episodes = float64(ep.Episodes())
		}
		if sp, ok := p.(interface{ Support() []int }); ok {
			rec.entries[j].Metrics = SupportMetrics(sp.Support(), cfg.Env.Support())
		}
		if _, ok := cfg.Env.(*env.Dataset); ok {
			// Progressive validation: each row is scored by the policy
			// before it learns from it.
			if rec.entries[j].Metrics == nil {
				rec.entries[j].Metrics = map[string]float64{}
			}
			rec.entries[j].Metrics["loss"] = 1 - got[j]/float64(cfg.Horizon)
		}
	}
}
