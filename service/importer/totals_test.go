package importer

import (
	"encoding/json"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestCountCountsTheImportedEventsAfterTheMark: a restart's recount
// (Totals.Count) counts, as Add did live, the imported events settled
// after the mark (by decision or by reward), and neither a live event
// nor an imported one settled up to the mark (the snapshot counts it).
func TestCountCountsTheImportedEventsAfterTheMark(t *testing.T) {
	events := []store.Event{
		{Seq: 1, RSeq: 2, Status: store.Learned, Reason: Reason(""), Debit: 5},                // before the mark
		{Seq: 3, RSeq: 4, Status: store.Learned, Reason: Reason(""), Debit: 7},                // settled after it
		{Seq: 2, RSeq: 5, Status: store.Ignored, Reason: Reason("unit_budget")},               // decided before, settled after
		{Seq: 6, RSeq: 6, Status: store.Expired, Reason: Reason(string(NotMatched))},          // an expired miss
		{Seq: 7, RSeq: 8, Status: store.Learned, Debit: 100},                                  // live
		{Seq: 9, RSeq: 10, Status: store.Ignored, Reason: "contribution_limit"},               // live
		{Seq: 11, RSeq: 12, Status: store.Expired, Reason: Reason(string(NoLoggedReward))},    // a table's end
		{Seq: 13, RSeq: 14, Status: store.Ignored, Reason: Reason("exploration"), Debit: 0},   // explored
		{Seq: 15, RSeq: 16, Status: store.Ignored, Reason: Reason("overflow_plan"), Debit: 0}, // overflow
		{Seq: 17, RSeq: 18, Status: store.Ignored, Reason: Reason("contribution_limit")},      // the limit
	}
	var got Totals
	got.Count(events, 2)
	want := Totals{Events: 5, Learned: 1, ContributionLimit: 1, UnitBudget: 1, Exploration: 1, Overflow: 1,
		NoLoggedReward: 1, NotMatched: 1, NanoRho: 7}
	if got != want {
		t.Fatalf("Count from 2: %+v, want %+v", got, want)
	}
	var all Totals
	all.Count(events, 0)
	if all.Events != 6 || all.Learned != 2 || all.NanoRho != 12 {
		t.Fatalf("Count from 0: %+v, want the first event counted too", all)
	}
}

// TestLoggedUnitIsTheUnitFeature: with a unit_feature a logged rank's
// unit is that feature's value (set when the record names none, kept
// when it names the same), a record naming another unit or lacking the
// feature is refused (Invalid); without one the record's unit stays.
func TestLoggedUnitIsTheUnitFeature(t *testing.T) {
	features := []json.RawMessage{json.RawMessage(`{"user":{"id":"ann"}}`)}
	var none define.Definition
	l := Event{ID: "e1", Unit: "u1"}
	if err := loggedUnit(&none, &l, features); err != nil || l.Unit != "u1" {
		t.Fatalf("no unit_feature: unit %q, %v; want u1 kept", l.Unit, err)
	}
	var d define.Definition
	d.UnitFeature = "user.id"
	for _, named := range []string{"", "ann"} {
		l := Event{ID: "e1", Unit: named}
		if err := loggedUnit(&d, &l, features); err != nil || l.Unit != "ann" {
			t.Fatalf("record unit %q: unit %q, %v; want ann", named, l.Unit, err)
		}
	}
	if err := loggedUnit(&d, &Event{ID: "e1", Unit: "bob"}, features); fault.Of(err) != fault.Invalid {
		t.Fatalf("another unit: %v, want Invalid", err)
	}
	if err := loggedUnit(&d, &Event{ID: "e1"}, nil); fault.Of(err) != fault.Invalid {
		t.Fatalf("no feature: %v, want Invalid", err)
	}
}
