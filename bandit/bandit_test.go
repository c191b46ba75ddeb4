package bandit

import "testing"

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
