package evaluation

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
)

// fakeExperiment is an engine experiment whose wait for durability and
// reading of the learner (Learned: its released estimate) a test
// replaces (nil: the experiment's own): what
// an evaluation asks of an experiment is the interface Experiment.
type fakeExperiment struct {
	*engine.Experiment
	durable, estimate error
}

func (f fakeExperiment) Durable(ctx context.Context) error {
	if f.durable != nil {
		return f.durable
	}
	return f.Experiment.Durable(ctx)
}

func (f fakeExperiment) Learned() (engine.Learned, chan struct{}, error) {
	if f.estimate != nil {
		return engine.Learned{}, nil, f.estimate
	}
	return f.Experiment.Learned()
}

// TestCreateWaitsDurable: an evaluation reads the log only once every
// change the experiment submitted is durable; when that wait fails (the
// writer stopped), the evaluation fails with its error and nothing is
// spent or stored: neither the experiment's evaluation ledger nor a
// unit's.
func TestCreateWaitsDurable(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true, UnitBudget: 3 * evalNano})
	h.Create(personalizerSpec("pz"))
	evalRounds(t, h, "e", 6, false, 21)
	units := evalUnits(t, h)
	before := unitTotals(t, h, units)
	stopped := fault.Errorf(fault.Unavailable, "the writer stopped")
	x := fakeExperiment{Experiment: h.Get("pz"), durable: stopped}
	if _, err := Create(context.Background(), x, "ev", evalRequest()); !errors.Is(err, stopped) {
		t.Fatalf("an evaluation whose wait for durability fails: %v, want %v", err, stopped)
	}
	spent, err := h.Store.EvaluationSpend(context.Background(), "default/pz")
	list, lerr := List(context.Background(), x)
	if err != nil || lerr != nil || spent != 0 || len(list) != 0 {
		t.Fatalf("spent %d (%v), %d evaluations stored (%v): want nothing", spent, err, len(list), lerr)
	}
	if got := unitTotals(t, h, units); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("the units' ledgers went from %v to %v", before, got)
	}
	x.durable = nil // the same request, once the wait succeeds, is evaluated
	if _, err := Create(context.Background(), x, "ev", evalRequest()); err != nil {
		t.Fatal(err)
	}
}

// TestCreateCurrentWithoutEstimate: the target "current" plays the
// learner's released estimate; a learner that exports none (NotFound) is
// a refused request naming the policies (Invalid), while a failure to
// read the estimate keeps its own kind (Unavailable: retry).
func TestCreateCurrentWithoutEstimate(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true})
	h.Create(personalizerSpec("pz"))
	evalRounds(t, h, "e", 3, false, 22)
	for _, c := range []struct {
		estimate error
		kind     fault.Kind
		field    string
	}{
		{fault.Errorf(fault.NotFound, "the learner exports no estimate"), fault.Invalid, "policies"},
		{fault.Errorf(fault.Unavailable, "the writer stopped"), fault.Unavailable, ""},
	} {
		x := fakeExperiment{Experiment: h.Get("pz"), estimate: c.estimate}
		_, err := Create(context.Background(), x, "ev", evalRequest("current"))
		var ee *Error
		if fault.Of(err) != c.kind || errors.As(err, &ee) != (c.field != "") || (ee != nil && ee.Field != c.field) {
			t.Fatalf("estimate %v: %v (kind %v), want kind %v naming %q", c.estimate, err, fault.Of(err), c.kind, c.field)
		}
	}
	if spent, _ := h.Store.EvaluationSpend(context.Background(), "default/pz"); spent != 0 {
		t.Fatalf("refusals spent %d", spent)
	}
}
