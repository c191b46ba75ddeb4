package mab

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state/statetest"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestIdentificationSnapshots: AdaP-TT and TT-UCB saved at points of a
// run (before any pull, mid-phase with a coin drawn and not yet played,
// after the stop) restore into a policy built anew to the same state,
// and, given the same coins (a copy of the generator) and rewards, make
// the same pulls and the same decision as the saved policy (without
// noise; with Laplace noise the round trip of the state is checked).
func TestIdentificationSnapshots(t *testing.T) {
	means := []float64{0.9, 0.4, 0.3}
	pure, _ := privacy.NewPure(1)
	for _, algo := range []string{"adap-tt", "tt-ucb"} {
		for _, b := range []privacy.Budget{privacy.None(), pure} {
			build := func(src *rand.PCG) bandit.Policy {
				st := bandit.Setting{Arms: len(means), Bounds: mechanism.Unit, Rand: rand.New(src), Noise: noise.NewFast(5), Horizon: 1 << 40}
				var p bandit.Policy
				var err error
				if algo == "adap-tt" {
					p, err = NewAdaPTT(st, b, 0.05, 0.5, ThresholdExperiments)
				} else {
					p, err = NewTTUCB(st, 0.05, 0.5)
				}
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			type saved struct {
				step int
				raw  []byte
				src  rand.PCG
			}
			var snaps []saved
			var arms []int
			var rewards []float64
			src := rand.NewPCG(1, 2)
			p := build(src)
			r := noise.Stream(9)
			const steps = 4000
			for step := range steps {
				pl := p.Next() // draws the coin: a snapshot now holds it
				if step%389 == 0 || step == 1 {
					raw, err := p.(bandit.Snapshotter).MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					snaps = append(snaps, saved{step, raw, *src})
				}
				x, _ := noise.Binomial(r, 1, means[pl.Arm])
				arms, rewards = append(arms, pl.Arm), append(rewards, float64(x))
				if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: float64(x)}); err != nil {
					t.Fatal(err)
				}
			}
			arm, tau, ok := p.(bandit.Identifier).Decision()
			if !ok || tau > steps/2 {
				t.Fatalf("%s %s: stopped %v at %d: the run should reach past its stop", algo, b, ok, tau)
			}
			for _, sv := range snaps {
				c := sv.src
				q := build(&c)
				if err := q.(bandit.Snapshotter).UnmarshalBinary(sv.raw); err != nil {
					t.Fatalf("%s %s step %d: %v", algo, b, sv.step, err)
				}
				if again, _ := q.(bandit.Snapshotter).MarshalBinary(); !bytes.Equal(sv.raw, again) {
					t.Fatalf("%s %s step %d: the restored state differs", algo, b, sv.step)
				}
				if b.IsPrivate() {
					continue
				}
				for step := sv.step; step < steps; step++ {
					pl := q.Next()
					if pl.Arm != arms[step] {
						t.Fatalf("%s step %d, restored at %d: arm %d, the saved policy pulled %d", algo, step, sv.step, pl.Arm, arms[step])
					}
					if err := q.Update(bandit.Feedback{Arm: pl.Arm, Count: 1, Sum: rewards[step]}); err != nil {
						t.Fatal(err)
					}
				}
				if a2, t2, ok2 := q.(bandit.Identifier).Decision(); a2 != arm || t2 != tau || !ok2 {
					t.Errorf("%s restored at %d: decision (%d, %d, %v), the saved policy's (%d, %d)", algo, sv.step, a2, t2, ok2, arm, tau)
				}
			}
		}
	}
}

// TestIdentificationRestoreRefuses: states no run reaches are refused.
func TestIdentificationRestoreRefuses(t *testing.T) {
	b, _ := privacy.NewPure(1)
	p, err := NewAdaPTT(setting(3, noise.NewFast(1)), b, 0.05, 0.5, ThresholdTheory)
	if err != nil {
		t.Fatal(err)
	}
	play(t, p, []float64{0.7, 0.5, 0.4}, 40, 3)
	statetest.Refuses(t, p, map[string]func(*adapTTState){
		"not a doubling":      func(s *adapTTState) { s.Counts = []int64{3, s.Counts[1], s.Counts[2]} },
		"open phase too long": func(s *adapTTState) { s.PhN = []int64{s.Counts[0], s.PhN[1], s.PhN[2]} },
		"leader out of range": func(s *adapTTState) { s.Leader = 3 },
		"pulls do not add up": func(s *adapTTState) { s.Steps.Pulls++ },
		"pending arm 7":       func(s *adapTTState) { s.Steps.Ready, s.Steps.Plan = true, bandit.Plan{Arm: 7, Count: 1} },
	})
}
