package bandit

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
)

func TestRestAndCheck(t *testing.T) {
	if p := Rest(2, 100, 30); p != (Plan{Arm: 2, Count: 70}) {
		t.Errorf("Rest = %+v", p)
	}
	if p := Rest(1, 0, 30); p.Count != 1<<62 {
		t.Errorf("unknown horizon: %+v", p)
	}
	p := Plan{Arm: 1, Count: 5}
	for _, f := range []Feedback{{Arm: 0, Count: 1}, {Arm: 1, Count: 6}} {
		if p.Check(f) == nil {
			t.Errorf("%+v accepted for %+v", f, p)
		}
	}
	if err := p.Check(Feedback{Arm: 1, Count: 5}); err != nil {
		t.Error(err)
	}
}

// TestPlanSum: feedback for another arm or more pulls than planned is
// refused as input, and a sum impossible in the bounds too; samples are
// clipped to the bounds.
func TestPlanSum(t *testing.T) {
	p := Plan{Arm: 1, Count: 3}
	for _, f := range []Feedback{{Arm: 0, Count: 1, Sum: 0.5}, {Arm: 1, Count: 4, Sum: 1}, {Arm: 1, Count: 2, Sum: 2.5}} {
		if _, err := p.Sum(f, mechanism.Unit); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("%+v: %v, want an input error", f, err)
		}
	}
	if s, err := p.Sum(Feedback{Arm: 1, Count: 2, Samples: []float64{-1, 0.25}}, mechanism.Unit); err != nil || s != 0.25 {
		t.Errorf("clipped samples sum to %v (%v), want 0.25", s, err)
	}
}
