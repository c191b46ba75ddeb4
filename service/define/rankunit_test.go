package define

import (
	"encoding/json"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
)

// TestRankUnit: without a unit_feature a rank's unit is its event and
// any unit passes the checks; with "user.id" it is that feature's value,
// a rank without it is refused (Invalid), and a native decision (its
// features, or its stored context) naming another unit is refused
// (Invalid), as is a stored context that is not JSON.
func TestRankUnit(t *testing.T) {
	features := []json.RawMessage{json.RawMessage(`{"weather":"sunny"}`), json.RawMessage(`{"user":{"id":42}}`)}
	var none Definition
	if u, err := none.RankUnit(features, "e1"); err != nil || u != "e1" {
		t.Fatalf("no unit_feature: %q, %v; want the event", u, err)
	}
	if err := none.CheckRankUnit("anyone", features); err != nil {
		t.Fatalf("no unit_feature: %v", err)
	}
	if err := none.CheckContextUnit("anyone", "not json"); err != nil {
		t.Fatalf("no unit_feature, a context not read: %v", err)
	}
	var d Definition
	d.UnitFeature = "user.id"
	if u, err := d.RankUnit(features, "e1"); err != nil || u != "42" {
		t.Fatalf("user.id: %q, %v; want 42", u, err)
	}
	if _, err := d.RankUnit(features[:1], "e1"); fault.Of(err) != fault.Invalid {
		t.Fatalf("a rank without user.id: %v, want Invalid", err)
	}
	if err := d.CheckRankUnit("42", features); err != nil {
		t.Fatalf("the context's unit: %v", err)
	}
	if err := d.CheckRankUnit("43", features); fault.Of(err) != fault.Invalid {
		t.Fatalf("another unit: %v, want Invalid", err)
	}
	ctxt := `{"contextFeatures":[{"user":{"id":"u1"}}],"actions":[]}`
	if err := d.CheckContextUnit("u1", ctxt); err != nil {
		t.Fatalf("the stored context's unit: %v", err)
	}
	if err := d.CheckContextUnit("u2", ctxt); fault.Of(err) != fault.Invalid {
		t.Fatalf("another unit than the stored context's: %v, want Invalid", err)
	}
	if err := d.CheckContextUnit("u1", "not json"); fault.Of(err) != fault.Invalid {
		t.Fatalf("a stored context that is not JSON: %v, want Invalid", err)
	}
}
