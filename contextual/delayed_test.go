package contextual_test

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

func TestDelayedOneChoiceInFlight(t *testing.T) {
	b, _ := privacy.NewZCDP(1)
	o, err := contextual.New(contextual.Setting{Dim: 2, Horizon: 1000, Bounds: mechanism.Unit, Noise: noise.NewFast(1)},
		contextual.Config{Lambda: 1, Delta: 0.01, S: 1, C: 1, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	d := contextual.NewDelayed(o)
	set := [][]float64{{1, 0}, {0, 1}}
	first, err := d.Decide(set)
	if err != nil || !first.Learns() {
		t.Fatalf("first %+v %v", first, err)
	}
	over, err := d.Decide(set)
	if err != nil || over.Learns() {
		t.Fatalf("a decision while the first is pending is overflow: %+v %v", over, err)
	}
	if err := d.Reward(over, 1); err == nil {
		t.Fatal("an overflow reward was learned")
	}
	if err := d.Drop(first); err != nil {
		t.Fatal(err)
	}
	if err := d.Reward(first, 1); !errors.Is(err, bandit.ErrStale) {
		t.Fatalf("reward after drop: %v", err)
	}
	next, err := d.Decide(set)
	if err != nil || !next.Learns() || next.Plan != 2 {
		t.Fatalf("after a drop the next decision learns: %+v %v", next, err)
	}
	if err := d.Reward(next, 0.5); err != nil || d.Pending() != 0 {
		t.Fatalf("%v, pending %d", err, d.Pending())
	}
}
