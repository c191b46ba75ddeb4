package define

import (
	"encoding/json"
	"testing"
)

// TestBaseline: a rank's baseline is its first eligible action (0); a
// slot's is its baselineAction's index among the eligible actions (the
// excluded ones, the slate's own and those taken by the slots before,
// left out), or 0 when a slot before took it.
func TestBaseline(t *testing.T) {
	slate := &SlateRequest{
		Actions: []RankableAction{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
		Slots:   []SlotRequest{{ID: "top", BaselineAction: "c"}, {ID: "side", BaselineAction: "d", ExcludedActions: []string{"a"}}},
	}
	rank, err := json.Marshal(RankRequest{Actions: slate.Actions, ExcludedActions: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		j     int
		taken []string
		want  int
	}{
		{"slot 0", 0, nil, 2},
		{"slot 1, b taken", 1, []string{"b"}, 1}, // eligible c, d
		{"slot 1, c taken", 1, []string{"c"}, 1}, // eligible b, d
		{"slot 1, d taken", 1, []string{"d"}, 0}, // eligible b, c: its first
		{"slot 1, none taken", 1, []string{}, 2}, // eligible b, c, d
	} {
		raw, err := slate.SlotRank("ev", c.j, c.taken)
		if err != nil {
			t.Fatal(err)
		}
		if got := Baseline(string(raw)); got != c.want {
			t.Errorf("%s: baseline %d, want %d", c.what, got, c.want)
		}
	}
	if got := Baseline(string(rank)); got != 0 {
		t.Errorf("a rank: baseline %d, want 0", got)
	}
}
