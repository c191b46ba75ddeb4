package define

import (
	"encoding/json"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestPropensitiesOfTheDecisionsOperation: a decision's propensities are
// those of the exploration of its operation's settings, not the current
// one: at exploration e over k actions, e/k each and 1 - e more for the
// policy's arm, summing to 1.
func TestPropensitiesOfTheDecisionsOperation(t *testing.T) {
	d := personalizerDef(t)
	d, err := d.With(Setting{From: 5, At: 50, Exploration: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seq int64
		e   float64
	}{{3, d.Exploration}, {5, d.Exploration}, {6, 0.5}} {
		p := d.Propensities(c.seq, 1, 4)
		e := ExploreProb(c.e)
		want := []float64{e / 4, 1 - e + e/4, e / 4, e / 4}
		for j := range want {
			if p[j] != want[j] {
				t.Fatalf("operation %d: propensities %v, want %v (exploration %v)", c.seq, p, want, c.e)
			}
		}
	}
}

// TestLoggingOnlyAt: only a Personalizer decision made after a setting
// of logging only mode, and before the next mode, was logged only.
func TestLoggingOnlyAt(t *testing.T) {
	d := personalizerDef(t)
	if d.LoggingOnlyAt(1) {
		t.Fatal("no setting: logged only")
	}
	d, _ = d.With(Setting{From: 5, At: 50, Mode: ModeLoggingOnly})
	d, _ = d.With(Setting{From: 9, At: 90, Mode: ModeOnline})
	for seq, want := range map[int64]bool{4: false, 5: false, 6: true, 9: true, 10: false} {
		if got := d.LoggingOnlyAt(seq); got != want {
			t.Errorf("operation %d: logged only %v, want %v", seq, got, want)
		}
	}
	native := d
	native.Surface = ""
	if native.LoggingOnlyAt(6) {
		t.Error("a native experiment's decision logged only")
	}
}

// TestStoredSet: a Personalizer experiment's stored rank request reads
// back as the decision set it was decided on; a stored context that no
// longer reads is Invalid; an experiment without decision sets has none.
func TestStoredSet(t *testing.T) {
	d := personalizerDef(t)
	raw, err := json.Marshal(storetest.RankBody("e", []string{"sports"}, false))
	if err != nil {
		t.Fatal(err)
	}
	ctxt, want, err := d.CheckContext(raw)
	if err != nil {
		t.Fatal(err)
	}
	set, err := d.StoredSet(ctxt)
	if err != nil || len(set) != len(want) || len(set) == 0 || len(set[0]) != d.Dim {
		t.Fatalf("stored set %v, %v; want %v", set, err, want)
	}
	for i := range want {
		for j := range want[i] {
			if set[i][j] != want[i][j] {
				t.Fatalf("stored set %v, want %v", set, want)
			}
		}
	}
	if _, err := d.StoredSet(`{"actions":[]}`); fault.Of(err) != fault.Invalid {
		t.Fatalf("a context that does not read: %v, want Invalid", err)
	}
	finite := Definition{}
	if set, err := finite.StoredSet("anything"); set != nil || err != nil {
		t.Fatalf("no decision sets: %v, %v", set, err)
	}
}
