package importer

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// fakeSession is a Session whose policy plays arms in turn (cycling),
// whose stored events are stored (id -> decided by an import), and which
// writes down what it was asked: each decision's id and each settlement
// ("id=reward" or "id:miss").
type fakeSession struct {
	arms    []int
	stored  map[string]bool
	stopAt  int // Identified once this many decisions are taken (0: never)
	decided []*Event
	ids     []string
	log     []string
}

func (f *fakeSession) Event(id string) (bool, bool, error) {
	imported, ok := f.stored[id]
	return ok, imported, nil
}

func (f *fakeSession) Identified() bool { return f.stopAt > 0 && len(f.ids) >= f.stopAt }

func (f *fakeSession) Decide(l *Event, name func(arm int) (string, string)) (int, error) {
	arm := f.arms[len(f.ids)%len(f.arms)]
	id := ""
	if l != nil {
		id = l.ID
	}
	if name != nil {
		id, _ = name(arm)
	}
	f.decided, f.ids = append(f.decided, l), append(f.ids, id)
	return arm, nil
}

func (f *fakeSession) Reward(r float64) (Settled, error) {
	f.log = append(f.log, fmt.Sprintf("%s=%g", f.ids[len(f.ids)-1], r))
	return Settled{Status: store.Learned, Debit: 1}, nil
}

func (f *fakeSession) Expire(why Miss) (Settled, error) {
	f.log = append(f.log, fmt.Sprintf("%s:%s", f.ids[len(f.ids)-1], why))
	return Settled{Status: store.Expired, Reason: string(why)}, nil
}

// fakeTarget runs its session as RunImport does (one run), counting an
// operation per decision and per settlement.
type fakeTarget struct {
	def  define.Definition
	s    *fakeSession
	runs int
}

func (t *fakeTarget) Definition() define.Definition { return t.def }

func (t *fakeTarget) RunImport(_ context.Context, run func(Session) error) (int64, error) {
	t.runs++
	err := run(t.s)
	return int64(len(t.s.ids) + len(t.s.log)), err
}

// finite is a finite-armed experiment's definition of k arms, rewards in
// [0, 1].
func finite(k int) define.Definition {
	return define.Definition{Spec: define.Spec{ID: "x", Arms: k, RewardRange: [2]float64{0, 1}}}
}

// ev is a logged event of arm and reward, its own unit, at line.
func ev(id string, arm int, r float64, line int) Event {
	return Event{ID: id, Unit: id, Arm: arm, Reward: r, Line: line}
}

// TestReadTableGivesEachArmItsLoggedRewardsInOrder: the reward-table
// model (Lattimore and Szepesvari 2020, section 4.6): the s-th pull of an
// arm reads the s-th logged event of that arm, in the log's order,
// whatever the order of the arms' pulls, and the first pull of an arm
// whose stack is used up ends the import, unrewarded, under the log's
// marker; the events not reached are unused.
func TestReadTableGivesEachArmItsLoggedRewardsInOrder(t *testing.T) {
	logged := []Event{ev("a0", 0, 0.1, 1), ev("b0", 1, 0.2, 2), ev("a1", 0, 0.3, 3), ev("a2", 0, 0.4, 4), ev("b1", 1, 0.5, 5)}
	s := &fakeSession{arms: []int{1, 0, 0, 1, 1}}
	res, err := Import(context.Background(), &fakeTarget{def: finite(2), s: s}, logged)
	if err != nil {
		t.Fatal(err)
	}
	marker := Marker(logged)
	want := []string{"b0=0.2", "a0=0.1", "a1=0.3", "b1=0.5", marker + ":no_logged_reward"}
	if !reflect.DeepEqual(s.log, want) {
		t.Fatalf("settlements %q, want %q", s.log, want)
	}
	if res.StoppedAtArm == nil || *res.StoppedAtArm != 1 || res.Marker != marker || res.Unused != 1 ||
		res.Events != 4 || res.Learned != 4 || res.NoLoggedReward != 1 || res.UnitsDebited != 4 || res.Operations != 10 || res.Logged != 5 {
		t.Fatalf("result %+v, want 4 events learned, stopped at arm 1 (marker %s), 1 unused, 4 units, 10 operations", res, marker)
	}
	for _, l := range s.decided {
		if l != nil {
			t.Fatalf("a reward table's decision was given a context: %+v", l)
		}
	}
	// Every stack used up: no marker.
	s = &fakeSession{arms: []int{0, 1}}
	res, err = Import(context.Background(), &fakeTarget{def: finite(2), s: s}, logged[:2])
	if err != nil || res.Marker != "" || res.StoppedAtArm != nil || res.Events != 2 || res.Unused != 0 {
		t.Fatalf("a log used whole: %+v, %v; want 2 events and no marker", res, err)
	}
}

// TestReplayRewardsTheMatchedActionsOnly: the replay method (Li, Chu,
// Langford and Wang 2011, Algorithm 1): each logged event, in order, is
// decided on its own context; the logged reward is given when the
// policy chose the logged action, and the decision expires "not_matched"
// otherwise, the event used up either way.
func TestReplayRewardsTheMatchedActionsOnly(t *testing.T) {
	def := finite(2)
	def.Dim = 1
	set := [][]float64{{0}, {1}}
	logged := []Event{ev("e0", 0, 1, 1), ev("e1", 0, 1, 2), ev("e2", 1, 0.5, 3)}
	for i := range logged {
		logged[i].Context, logged[i].Set = fmt.Sprintf("ctx%d", i), set
	}
	s := &fakeSession{arms: []int{0, 1, 1}}
	res, err := Import(context.Background(), &fakeTarget{def: def, s: s}, logged)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"e0=1", "e1:not_matched", "e2=0.5"}; !reflect.DeepEqual(s.log, want) {
		t.Fatalf("settlements %q, want %q", s.log, want)
	}
	for i, l := range s.decided {
		if l == nil || l.Context != logged[i].Context {
			t.Fatalf("decision %d was taken on %+v, want the logged event's context %q", i, l, logged[i].Context)
		}
	}
	if res.Events != 2 || res.NotMatched != 1 || res.Unused != 0 || res.Marker != "" || res.StoppedAtArm != nil {
		t.Fatalf("result %+v, want 2 events and 1 not matched", res)
	}
}

// TestUsableSkipsRepeatedStoredAndLiveIDs: an id repeated in the log, one
// an import decided and one decided live are skipped, counted and
// listed (the first maxReported), never decided again.
func TestUsableSkipsRepeatedStoredAndLiveIDs(t *testing.T) {
	logged := []Event{ev("live", 0, 1, 1), ev("old", 0, 1, 2), ev("a", 0, 1, 3), ev("a", 0, 1, 4), ev("b", 0, 1, 5)}
	for i := range 12 {
		logged = append(logged, ev("b", 0, 0, 6+i))
	}
	s := &fakeSession{arms: []int{0}, stored: map[string]bool{"live": false, "old": true}}
	res, err := Import(context.Background(), &fakeTarget{def: finite(2), s: s}, logged)
	if err != nil {
		t.Fatal(err)
	}
	if res.LiveIDs != 1 || res.AlreadyImported != 1 || res.Duplicates != 13 || len(res.Skipped) != maxReported {
		t.Fatalf("skipped %d live, %d imported, %d repeated, %d listed; want 1, 1, 13, %d", res.LiveIDs, res.AlreadyImported, res.Duplicates, len(res.Skipped), maxReported)
	}
	if want := (Skipped{1, "live", "live_event_id"}); res.Skipped[0] != want || res.Skipped[1] != (Skipped{2, "old", "already_imported"}) || res.Skipped[2] != (Skipped{4, "a", "duplicate"}) {
		t.Fatalf("listed %+v, want live (line 1), old (2), a (4) first", res.Skipped[:3])
	}
	if want := []string{"a=1", "b=1"}; !reflect.DeepEqual(s.log, want) {
		t.Fatalf("settlements %q, want %q", s.log, want)
	}
}

// TestAnImportedLogChangesNothing: once a log's marker is stored, the same
// log again decides nothing; its events are counted as they now are.
func TestAnImportedLogChangesNothing(t *testing.T) {
	logged := []Event{ev("a", 0, 1, 1), ev("b", 1, 1, 2), ev("c", 1, 1, 3)}
	s := &fakeSession{arms: []int{0}, stored: map[string]bool{Marker(logged): true, "a": true}}
	res, err := Import(context.Background(), &fakeTarget{def: finite(2), s: s}, logged)
	if err != nil || len(s.ids) != 0 || res.AlreadyImported != 1 || res.Unused != 2 || res.Operations != 0 {
		t.Fatalf("the same log again: %+v, %v, %d decisions; want none, 1 already imported, 2 unused", res, err, len(s.ids))
	}
}

// TestIdentifiedStopsTheImport: once a best-arm identification's stopping
// rule fires, the import takes no more decisions and leaves the rest of
// the log unused (both walks).
func TestIdentifiedStopsTheImport(t *testing.T) {
	logged := []Event{ev("a", 0, 1, 1), ev("b", 0, 1, 2), ev("c", 0, 1, 3), ev("d", 0, 1, 4)}
	for _, dim := range []int{0, 1} {
		def := finite(2)
		def.Dim = dim
		if dim > 0 {
			for i := range logged {
				logged[i].Set = [][]float64{{0}, {1}}
			}
		}
		s := &fakeSession{arms: []int{0}, stopAt: 1}
		res, err := Import(context.Background(), &fakeTarget{def: def, s: s}, logged)
		if err != nil || len(s.ids) != 1 || res.Unused != 3 || res.Events != 1 {
			t.Fatalf("dim %d: %+v, %v, %d decisions; want 1 and 3 unused", dim, res, err, len(s.ids))
		}
	}
}

// TestImportRefusesAnEventThatDoesNotFit: the log is checked whole before
// anything is decided; the first event that does not fit the experiment
// refuses it, with its kind and line.
func TestImportRefusesAnEventThatDoesNotFit(t *testing.T) {
	ctx := finite(3)
	ctx.Dim = 2
	pz := finite(3)
	pz.Dim, pz.Surface = 4, define.SurfacePersonalizer
	for name, c := range map[string]struct {
		def  define.Definition
		l    Event
		kind fault.Kind
	}{
		"no id":           {finite(2), Event{Unit: "u", Line: 7}, fault.Invalid},
		"no unit":         {finite(2), Event{ID: "e", Line: 7}, fault.Invalid},
		"arm below":       {finite(2), ev("e", -1, 0, 7), fault.Invalid},
		"arm above":       {finite(2), ev("e", 2, 0, 7), fault.Invalid},
		"reward above":    {finite(2), ev("e", 0, 1.5, 7), fault.OutOfRange},
		"reward below":    {finite(2), ev("e", 0, -0.1, 7), fault.OutOfRange},
		"no decision set": {ctx, ev("e", 0, 0, 7), fault.Invalid},
		"no rank":         {pz, Event{ID: "e", Unit: "e", Line: 7, Set: [][]float64{{0}}}, fault.Invalid},
	} {
		s := &fakeSession{arms: []int{0}}
		tg := &fakeTarget{def: c.def, s: s}
		_, err := Import(context.Background(), tg, []Event{c.l, ev("ok", 0, 1, 8)})
		if fault.Of(err) != c.kind || tg.runs != 0 {
			t.Fatalf("%s: %v (kind %v), %d runs; want kind %v and nothing run", name, err, fault.Of(err), tg.runs, c.kind)
		}
		if msg := err.Error(); len(msg) < 7 || msg[:7] != "line 7:" {
			t.Fatalf("%s: %q does not name line 7", name, msg)
		}
	}
}

// TestMarkerIsTheLogsIDsInOrder: the marker is a digest of the log's ids
// in order, each ended by a zero byte (so that "ab","c" and "a","bc"
// differ), and stays what it was: a log imported before must still find
// its marker stored (its value pinned).
func TestMarkerIsTheLogsIDsInOrder(t *testing.T) {
	m := func(ids ...string) string {
		var l []Event
		for _, id := range ids {
			l = append(l, Event{ID: id})
		}
		return Marker(l)
	}
	if got := m("a", "b"); got != "import-8fb20ef63ced4145fc2e983ffe597d1d" {
		t.Fatalf("marker of a, b: %s", got)
	}
	if m("a", "b") == m("b", "a") || m("ab", "c") == m("a", "bc") {
		t.Fatal("markers of different logs are equal")
	}
}

// TestReasonsAreStoredAsBefore: the stored reasons of imported events,
// which a restart counts again (IsImported), keep their form, and Add
// counts each reason under its total.
func TestReasonsAreStoredAsBefore(t *testing.T) {
	for reason, stored := range map[string]string{"": "imported", "unit_budget": "imported:unit_budget", "not_matched": "imported:not_matched"} {
		if got := Reason(reason); got != stored {
			t.Fatalf("Reason(%q) = %q, want %q", reason, got, stored)
		}
		if got, ok := IsImported(stored); !ok || got != reason {
			t.Fatalf("IsImported(%q) = %q, %v", stored, got, ok)
		}
	}
	if _, ok := IsImported("unit_budget"); ok {
		t.Fatal("a live event's reason read as imported")
	}
	var tot Totals
	for _, r := range []string{"", "contribution_limit", "unit_budget", "exploration", "overflow"} {
		tot.Add(store.Learned, r, 2)
	}
	tot.Add(store.Expired, string(NotMatched), 0)
	tot.Add(store.Expired, string(NoLoggedReward), 0)
	want := Totals{Events: 5, Learned: 1, ContributionLimit: 1, UnitBudget: 1, Exploration: 1, Overflow: 1, NotMatched: 1, NoLoggedReward: 1, NanoRho: 10}
	if tot != want {
		t.Fatalf("totals %+v, want %+v", tot, want)
	}
}
