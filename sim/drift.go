package sim

import (
	"context"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
)

// runDrifting plays policy p on a drifting instance for one run: each
// step t draws the pulled arm's reward from the means of step t
// (env.Drifting.Sample, one variate per step from the run's stream, so
// that every policy of the run sees the same variates), and the regret is
// dynamic, sum_t max_i mu_i(t) - mu_{A_t}(t). In Batched mode a plan is
// played whole (its rewards summed over its steps), otherwise one step at
// a time; the rewards and the regret are the same.
func runDrifting(ctx context.Context, cfg *Config, p bandit.Policy, d *env.Drifting, run uint64, c *curve) error {
	if !cfg.Delay.IsZero() {
		return errorf("delayed rewards are not simulated on a drifting instance")
	}
	k := d.Arms()
	wantSamples := false
	if su, ok := p.(bandit.SampleUser); ok {
		wantSamples = su.NeedsSamples()
	}
	r := env.DriftStream(cfg.Seed, run)
	var samples []float64
	for iter := 0; c.t < cfg.Horizon; iter++ {
		if iter&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		pl := p.Next()
		if pl.Arm < 0 || pl.Arm >= k || pl.Count < 1 {
			return errorf("invalid plan %+v", pl)
		}
		n := min(pl.Count, cfg.Horizon-c.t)
		if cfg.Mode != Batched {
			n = 1
		}
		sum := 0.0
		samples = samples[:0]
		for range n {
			mu := d.MeansAt(c.t)
			x := d.Sample(r, pl.Arm, c.t)
			sum += x
			if wantSamples {
				samples = append(samples, x)
			}
			c.add(1, slices.Max(mu)-mu[pl.Arm])
		}
		fb := bandit.Feedback{Arm: pl.Arm, Count: n, Sum: sum}
		if wantSamples {
			fb.Samples = samples
		}
		if err := p.Update(fb); err != nil {
			return err
		}
	}
	return nil
}
