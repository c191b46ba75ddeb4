package sim

import (
	"context"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/env"
)

// sumRecorder plays arm 1 in plans of 7 and keeps the rewards' total.
type sumRecorder struct{ total *float64 }

func (r sumRecorder) Next() bandit.Plan { return bandit.Plan{Arm: 1, Count: 7} }
func (r sumRecorder) Update(f bandit.Feedback) error {
	*r.total += f.Sum
	return nil
}

// TestDriftingDynamicRegret: on a piecewise-stationary instance a policy
// that always plays arm 1 has the dynamic regret of the gaps of each
// segment, exactly (0.2 a step before step 100, 0 after: 20 at T = 300,
// at every checkpoint by the same sum), in both modes; both modes see the
// same rewards; delays are refused.
func TestDriftingDynamicRegret(t *testing.T) {
	inst, err := env.Parse("piecewise-bernoulli:0.5,0.3/0.3,0.5@100", 0)
	if err != nil {
		t.Fatal(err)
	}
	totals := map[Mode]float64{}
	for _, mode := range []Mode{Batched, Independent} {
		tot := new(float64)
		res, err := Run(context.Background(), Config{Env: inst, Horizon: 300, Runs: 1, Seed: 4, Workers: 1, Mode: mode,
			Checkpoints: []int64{50, 100, 150, 300}},
			[]Entry{{Name: "arm1", New: func(bandit.Setting) (bandit.Policy, error) { return sumRecorder{tot}, nil }}})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Regret(0)[0]
		for i, want := range []float64{10, 20, 20, 20} {
			if math.Abs(got[i]-want) > 1e-9 {
				t.Errorf("mode %d: regret %v, want [10 20 20 20]", mode, got)
				break
			}
		}
		totals[mode] = *tot
	}
	if totals[Batched] != totals[Independent] || totals[Batched] == 0 {
		t.Errorf("the modes saw rewards totalling %v", totals)
	}
	_, err = Run(context.Background(), Config{Env: inst, Horizon: 300, Runs: 1, Workers: 1, Delay: Delay{Miss: 0.5}},
		[]Entry{{Name: "arm1", New: func(bandit.Setting) (bandit.Policy, error) { return sumRecorder{new(float64)}, nil }}})
	if err == nil {
		t.Error("a delayed drifting run accepted")
	}
}
