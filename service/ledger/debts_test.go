package ledger

import (
	"reflect"
	"testing"

	"github.com/dpbandit/dpbandit/service/store"
)

// TestUnfolded: what a crash left unfolded of a history read from
// operation 4, folded to 5, is the index of the events decided after 5
// up to the last operation (decision or reward: 9), with the debits of
// the rewards learned or defaulted after 5 (not those folded, ignored or
// expired); a cursor at the last operation folds nothing, and one past
// it (a store written before folds) moves back to it, indexing nothing.
func TestUnfolded(t *testing.T) {
	events := []store.Event{
		{Seq: 3, RSeq: 5, Unit: "a", Status: store.Learned, Debit: 1}, // folded
		{Seq: 4, RSeq: 6, Unit: "a", Status: store.Learned, Debit: 3},
		{Seq: 6, RSeq: 9, Unit: "b", Status: store.Defaulted, Debit: 5},
		{Seq: 7, RSeq: 8, Unit: "b", Status: store.Ignored, Debit: 0},
		{Seq: 8, Unit: "c", Status: store.Pending},
	}
	last, f := Unfolded(events, 4, 5)
	want := &store.Fold{Upto: 9, Index: store.Span{Lo: 6, Hi: 9},
		Debits: []store.Debit{{Unit: "a", Rewards: 1, Nano: 3}, {Unit: "b", Rewards: 1, Nano: 5}}}
	if last != 9 || !reflect.DeepEqual(f, want) {
		t.Fatalf("Unfolded from 5: %d, %+v; want 9, %+v", last, f, want)
	}
	if last, f := Unfolded(events, 4, 9); last != 9 || f != nil {
		t.Fatalf("folded to the last operation: %d, %+v; want 9 and no fold", last, f)
	}
	if last, f := Unfolded(nil, 12, 12); last != 12 || f != nil {
		t.Fatalf("nothing after the mark: %d, %+v; want 12 and no fold", last, f)
	}
	last, f = Unfolded(events, 4, 11)
	if want := (&store.Fold{Upto: 9, Debits: []store.Debit{}}); last != 9 || !reflect.DeepEqual(f, want) {
		t.Fatalf("a cursor past the last operation: %d, %+v; want 9, %+v", last, f, want)
	}
}
