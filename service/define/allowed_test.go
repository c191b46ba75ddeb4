package define

import (
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestStatusAllows: an active experiment decides and takes rewards, a
// paused one takes rewards but no decision (Conflict), an archived one
// neither (Gone); a reward outside the declared range, its ends
// included, is OutOfRange, NaN too.
func TestStatusAllows(t *testing.T) {
	for _, c := range []struct {
		status         string
		decide, reward fault.Kind
	}{{store.Active, none, none}, {store.Paused, fault.Conflict, none}, {store.Archived, fault.Gone, fault.Gone}} {
		d := Definition{Spec: Spec{ID: "x", RewardRange: [2]float64{-1, 2}}, Status: c.status}
		if k := kindOf(d.CheckDecide()); k != c.decide {
			t.Errorf("%s: a decision %v, want %v", c.status, k, c.decide)
		}
		for _, r := range []float64{-1, 0.5, 2} {
			if k := kindOf(d.CheckReward(r)); k != c.reward {
				t.Errorf("%s: reward %v %v, want %v", c.status, r, k, c.reward)
			}
		}
		if c.status == store.Archived {
			continue
		}
		for _, r := range []float64{-1.0000001, 2.0000001, math.NaN(), math.Inf(1)} {
			if k := kindOf(d.CheckReward(r)); k != fault.OutOfRange {
				t.Errorf("%s: reward %v %v, want OutOfRange", c.status, r, k)
			}
		}
	}
}

// TestTransition: a pause only from active, a resume only from paused,
// an archive from either; a move to the status it has changes nothing.
func TestTransition(t *testing.T) {
	all := []string{store.Active, store.Paused, store.Archived}
	allowed := map[[2]string]bool{{store.Active, store.Paused}: true, {store.Paused, store.Active}: true, {store.Active, store.Archived}: true, {store.Paused, store.Archived}: true}
	for _, from := range all {
		for _, to := range all {
			d := Definition{Spec: Spec{ID: "x"}, Status: from}
			change, err := d.Transition(to)
			switch {
			case from == to && (change || err != nil):
				t.Errorf("%s to itself: %v, %v; want no change", from, change, err)
			case from != to && allowed[[2]string{from, to}] && (!change || err != nil):
				t.Errorf("%s to %s: %v, %v; want a change", from, to, change, err)
			case from != to && !allowed[[2]string{from, to}] && (change || kindOf(err) != fault.Conflict):
				t.Errorf("%s to %s: %v, %v; want Conflict", from, to, change, err)
			}
		}
	}
}

// TestCheckRetry: a decision retried for its event id must name the
// same unit and the same context as a JSON value (numbers as numbers,
// members in any order); an empty context is not compared.
func TestCheckRetry(t *testing.T) {
	ev := store.Event{ID: "e", Unit: "u", Context: `{"a":0.25,"b":[1,2]}`}
	for _, c := range []struct {
		unit, ctxt string
		want       fault.Kind
	}{
		{"u", `{"a":0.25,"b":[1,2]}`, none},
		{"u", `{"b":[1,2.0],"a":2.5e-1}`, none},
		{"u", "", none},
		{"v", `{"a":0.25,"b":[1,2]}`, fault.Conflict},
		{"u", `{"a":0.5,"b":[1,2]}`, fault.Conflict},
		{"u", `{"a":0.25,"b":[2,1]}`, fault.Conflict},
		{"u", `{"a":0.25,"b":[1,2]`, fault.Conflict},
	} {
		if k := kindOf(CheckRetry(ev, c.unit, c.ctxt)); k != c.want {
			t.Errorf("unit %q, context %s: %v, want %v", c.unit, c.ctxt, k, c.want)
		}
	}
}

// none is the "kind" of no error, in the tables above.
const none fault.Kind = -1

// kindOf returns err's kind, none for nil.
func kindOf(err error) fault.Kind {
	if err == nil {
		return none
	}
	return fault.Of(err)
}
