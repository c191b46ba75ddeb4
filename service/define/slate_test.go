package define

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestSlotRank: a slot's rank excludes its own excluded actions and
// those of the slots before it, adds its features to the context's and
// is marked with its slot (slot 0 with every slot's id); a slot whose
// actions the slots before took is left empty (nil).
func TestSlotRank(t *testing.T) {
	raw := []byte(`{"contextFeatures":[{"w":"sunny"}],"actions":[{"id":"a","features":[]},{"id":"b","features":[]},{"id":"c","features":[]}],
	  "slots":[{"id":"s0","baselineAction":"a"},{"id":"s1","baselineAction":"b","excludedActions":["c"]},{"id":"s2","baselineAction":"c","features":[{"p":2}]}]}`)
	s, err := ReadSlate(raw, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.SlotRank("e", 1, []string{"a", "b"}); err != nil || r != nil {
		t.Fatalf("slot 1 after a and b: %s, %v; want none", r, err)
	}
	r, err := s.SlotRank("e", 2, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ReadRank(r, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Eligible) != 2 || rs.Eligible[0] != 1 || rs.Eligible[1] != 2 || len(rs.Request.ContextFeatures) != 2 ||
		rs.Request.Slot == nil || fmt.Sprint(*rs.Request.Slot) != fmt.Sprint(SlotRef{Event: "e", Index: 2, ID: "s2", Baseline: "c"}) {
		t.Fatalf("slot 2 after a: %s", r)
	}
	r0, _ := s.SlotRank("e", 0, nil)
	var q RankRequest
	if err := json.Unmarshal(r0, &q); err != nil || len(q.Slot.IDs) != 3 || q.Slot.IDs[2] != "s2" {
		t.Fatalf("slot 0: %s", r0)
	}
	if err := q.CheckNoSlot(); err == nil {
		t.Fatal("a rank carrying a slot passes CheckNoSlot")
	}
}
