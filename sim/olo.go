package sim

import (
	"context"
	"fmt"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
)

// OLOEntry is one online learner of an experiment.
type OLOEntry = Of[olo.Setting, olo.Learner]

// OLOConfig describes an online learning simulation.
type OLOConfig struct {
	Env *olo.Losses
	Steps
}

// RunOLO simulates online learners step by step. In run i every learner
// sees the same loss sequence; regret at step t is sum_s <l_s, x_s> -
// min over the decision set of sum_s <l_s, x>, exact (x_s is the
// learner's prediction; for experts, its distribution).
func RunOLO(ctx context.Context, cfg OLOConfig, entries []OLOEntry) (*Result, error) {
	if cfg.Env == nil {
		return nil, errorf("no loss sequence")
	}
	return stepwise(ctx, &cfg.Steps, len(entries), func(ctx context.Context, run uint64, rec *record) error {
		return runOLO(ctx, &cfg, entries, run, rec)
	})
}

func runOLO(ctx context.Context, cfg *OLOConfig, entries []OLOEntry, run uint64, rec *record) error {
	n := cfg.Env.N
	ls := make([]olo.Learner, len(entries))
	for j, e := range entries {
		nz := privacyNoise(cfg.Secure, cfg.Seed, run, e.NoiseKey)
		l, err := e.New(olo.Setting{N: n, T: cfg.Horizon, Set: cfg.Env.Set(), Rand: noise.Stream(cfg.Seed, run, tagPolicy, e.NoiseKey), Noise: nz})
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		ls[j] = l
		rec.entries[j].Regret = make([]float64, len(cfg.Checkpoints))
	}
	lr := cfg.Env.NewRun(cfg.Seed, run)
	cum := make([]float64, n)
	incurred := make([]float64, len(entries))
	ck := cfg.Checkpoints
	ci := 0
	done := ctx.Done()
	for t := int64(1); t <= cfg.Horizon; t++ {
		// Every step: a step can be slow (large d or N).
		if err := interrupted(ctx, done); err != nil {
			return err
		}
		loss := lr.Next()
		for j, l := range ls {
			x, _, err := l.Play()
			if err == nil {
				s := 0.0
				for i, v := range x {
					s += v * loss[i]
				}
				incurred[j] += s
				err = l.Observe(loss)
			}
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", entries[j].Name, run, err)
			}
		}
		for i, v := range loss {
			cum[i] += v
		}
		for ci < len(ck) && ck[ci] == t {
			best := cfg.Env.Best(cum)
			for j := range ls {
				rec.entries[j].Regret[ci] = incurred[j] - best
			}
			ci++
		}
	}
	return nil
}

// interrupted returns ctx's error once done (ctx.Done()) is closed, and
// nil before: a non-blocking receive costs a few nanoseconds, cheap
// enough for every step.
func interrupted(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return ctx.Err()
	default:
		return nil
	}
}
