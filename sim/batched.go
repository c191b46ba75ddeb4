package sim

import (
	"context"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
)

// BatchedEntry is one batched policy of an experiment.
type BatchedEntry = Of[bandit.Setting, bandit.BatchPolicy]

// BatchedConfig describes a batched simulation: a linear instance, and an
// adversary that corrupts what the learner observes (nil: none).
type BatchedConfig struct {
	Env       *env.Linear
	Adversary *env.Corrupted
	Steps
}

// tagCorrupt keys the adversary's draws.
const tagCorrupt = 1<<62 + 3

// RunBatched simulates batched policies. A batch costs O(its rewards)
// for the clients (each reward is drawn, clipped and, under M1,
// randomised on its own, as the Filter needs every point) and O(1) for
// the final action's pulls, whose rewards no one observes: a run costs
// O(sum of the batch sizes), about T^((B-1)/B), not O(T).
//
// The adversary of seed 004, Eq. (3), replaces each observation the
// learner receives, independently with probability alpha: a reward, an
// M1 client's report, or an M2 client's batch mean (Section 3.2 analyses
// corruption of those |supp pi| responses). Corruption thus acts after
// the clients' randomisers, as a malicious client or channel would: a
// far value reaches the learner unclipped, and clipping, the clients'
// duty for privacy, cannot hide it; the learner's estimator must.
//
// In run i every policy faces the same reward streams (common random
// numbers) and the same sequence of corruption draws. Regret is the
// pseudo-regret on the true (uncorrupted) means.
func RunBatched(ctx context.Context, cfg BatchedConfig, entries []BatchedEntry) (*Result, error) {
	if cfg.Env == nil {
		return nil, errorf("no environment")
	}
	if err := cfg.Steps.prepare(len(entries)); err != nil {
		return nil, err
	}
	return entrywise(ctx, &cfg.Steps, entries, func(e BatchedEntry) string { return e.Name },
		func(ctx context.Context, e BatchedEntry, run uint64) ([]float64, float64, map[string]float64, error) {
			regret, ep, err := runBatchedOne(ctx, &cfg, e, run)
			return regret, ep, nil, err
		})
}

// runBatchedOne plays one entry for one run.
func runBatchedOne(ctx context.Context, cfg *BatchedConfig, e BatchedEntry, run uint64) ([]float64, float64, error) {
	inst := cfg.Env
	k := inst.Arms()
	p, err := e.New(bandit.Setting{Arms: k, Horizon: cfg.Horizon, Bounds: inst.Bounds(),
		Rand: noise.Stream(cfg.Seed, run, tagPolicy, e.NoiseKey), Noise: privacyNoise(cfg.Secure, cfg.Seed, run, e.NoiseKey), Actions: inst.Actions()})
	if err != nil {
		return nil, 0, err
	}
	gaps := env.Gaps(inst.Means())
	adv := noise.Stream(cfg.Seed, run, tagCorrupt)
	var attack *env.Attack
	if cfg.Adversary != nil {
		attack = cfg.Adversary.NewAttack()
	}
	streams := make([]*env.Stream, k)
	pos := make([]int64, k)
	c := curve{ck: cfg.Checkpoints, out: make([]float64, len(cfg.Checkpoints))}
	var rewards []float64
	batches := 0
	for c.t < cfg.Horizon {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		arms, counts, ok, err := p.Next()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			a := p.Best()
			if a < 0 || a >= k {
				return nil, 0, errorf("best action %d of %d", a, k)
			}
			c.add(cfg.Horizon-c.t, gaps[a])
			break
		}
		batches++
		obs := make([][]float64, len(arms))
		for j, a := range arms {
			n := min(counts[j], cfg.Horizon-c.t)
			if a < 0 || a >= k || n < 1 || n != counts[j] {
				return nil, 0, errorf("invalid batch entry: %d pulls of action %d (%d left)", counts[j], a, cfg.Horizon-c.t)
			}
			if streams[a] == nil {
				streams[a] = inst.Stream(cfg.Seed, run, a, cfg.Horizon)
			}
			rewards = streams[a].Samples(pos[a], pos[a]+n, rewards[:0])
			pos[a] += n
			c.add(n, gaps[a])
			o, err := p.Report(j, rewards)
			if err != nil {
				return nil, 0, err
			}
			if attack != nil {
				for i, y := range o {
					o[i] = attack.Observe(adv, a, y)
				}
			}
			obs[j] = o
		}
		if err := p.Observe(obs); err != nil {
			return nil, 0, err
		}
	}
	return c.out, float64(batches), nil
}

// curve accumulates a pseudo-regret curve at checkpoints over blocks of
// pulls of one action each.
type curve struct {
	ck  []int64
	out []float64
	ci  int
	t   int64
	reg float64
}

// add records n pulls of an action of gap g.
func (c *curve) add(n int64, g float64) {
	for c.ci < len(c.ck) && c.ck[c.ci] <= c.t+n {
		c.out[c.ci] = c.reg + g*float64(c.ck[c.ci]-c.t)
		c.ci++
	}
	c.reg += g * float64(n)
	c.t += n
}
