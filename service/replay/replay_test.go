package replay

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// TestOpsInterleavesDecisionsAndSettlements: a history's decisions and
// settlements are replayed by their operation numbers, whatever the
// order of the events; a settlement's kind follows its status (learned
// and defaulted rewards are learned, an overflow decision's reward is
// only seen, any other is a drop); a pending event has no settlement.
func TestOpsInterleavesDecisionsAndSettlements(t *testing.T) {
	events := []store.Event{
		{Seq: 1, ID: "a", Plan: 1, RSeq: 4, Status: store.Learned},
		{Seq: 2, ID: "b", Plan: 1, RSeq: 6, Status: store.Defaulted},
		{Seq: 3, ID: "c", Plan: 0, RSeq: 5, Status: store.Ignored},
		{Seq: 7, ID: "d", Plan: 2, RSeq: 8, Status: store.Ignored},
		{Seq: 9, ID: "e", Plan: 2, Status: store.Pending},
	}
	got, err := Ops(events, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{{1, Decide, 0}, {2, Decide, 1}, {3, Decide, 2}, {4, Reward, 0}, {5, Seen, 2}, {6, Reward, 1},
		{7, Decide, 3}, {8, Drop, 3}, {9, Decide, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ops %v, want %v", got, want)
	}
}

// TestOpsAfterASnapshot: after a snapshot at operation 3, the events
// decided up to it are not decided again, only settled; each must have
// been pending at it (its ticket given), not settled by then.
func TestOpsAfterASnapshot(t *testing.T) {
	events := []store.Event{
		{Seq: 2, ID: "a", Plan: 1, RSeq: 5, Status: store.Learned},
		{Seq: 3, ID: "b", Plan: 1, Status: store.Pending},
		{Seq: 4, ID: "c", Plan: 1, RSeq: 6, Status: store.Expired},
	}
	pending := map[int64]bandit.Ticket{2: {Arm: 1}, 3: {Arm: 0}}
	got, err := Ops(events, 3, pending)
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{{4, Decide, 2}, {5, Reward, 0}, {6, Drop, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ops %v, want %v", got, want)
	}
	for _, c := range []struct {
		name    string
		events  []store.Event
		pending map[int64]bandit.Ticket
	}{
		{"an event decided before the snapshot that was not pending", events, map[int64]bandit.Ticket{2: {}}},
		{"a pending event not stored", events, map[int64]bandit.Ticket{1: {}, 2: {}, 3: {}}},
		{"an event settled before the snapshot", []store.Event{{Seq: 2, ID: "a", RSeq: 3, Status: store.Learned}}, pending},
		{"a pending event stored twice", []store.Event{{Seq: 2, ID: "a"}, {Seq: 2, ID: "b"}}, map[int64]bandit.Ticket{2: {}, 3: {}}},
	} {
		if _, err := Ops(c.events, 3, c.pending); !errors.Is(err, snapshot.ErrBad) {
			t.Errorf("%s: %v, want snapshot.ErrBad", c.name, err)
		}
	}
}

// TestOpsRefusesAnIDStoredTwice: two events of one id do not replay
// what was served (tape.ErrDiverged).
func TestOpsRefusesAnIDStoredTwice(t *testing.T) {
	events := []store.Event{{Seq: 1, ID: "a", Plan: 1}, {Seq: 2, ID: "a", Plan: 1}}
	if _, err := Ops(events, 0, nil); !errors.Is(err, tape.ErrDiverged) {
		t.Fatalf("an id stored twice: %v, want tape.ErrDiverged", err)
	}
}
