package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/store"
)

// full returns a snapshot of version 2 with every field set (each to a
// value of its own), of def() at operation 41.
func full() Snapshot {
	return Snapshot{Version: 2, Algorithm: "dp-se", Seq: 41, Releases: 3, Draws: 17, Policy: []byte{1, 2, 3, 250},
		Counts: outcome.Counts{Decisions: 30, Overflow: 1, Explored: 2, Rewards: 20, Learned: 15, Ignored: 3, Defaulted: 1, Expired: 1},
		Pulls:  []int64{12, 18}, Series: []outcome.Sample{{Decisions: 16, Pulls: []int64{7, 9}}},
		Recent: []store.Release{{Seq: 40, Kind: "gaussian", Scale: 1.5, Sensitivity: 1, Value: 0.25, Arm: 1, At: 1700000000000000000}},
		Slots:  []Slot{{Event: 39, Ticket: bandit.Ticket{Arm: 1, Plan: 2, Seq: 28}}}, Unfreed: store.Span{Lo: 21, Hi: 39},
		Apprentice: rules.Apprentice{On: true, Switched: true, SwitchedAt: 25, N: 9, Blocks: 2, Sum: 1.25, Var: 0.5, Max: 0.75, LCB: -0.125,
			BlockN: 4, BlockSum: 0.5, BlockVar: 0.0625, BlockMax: 0.25, Greedy: map[int64]rules.Greedy{38: {Pi: 1, K: 2}}},
		Pooled:   []Slot{{Event: 37, Ticket: bandit.Ticket{Seq: 26}}},
		Imported: importer.Totals{Events: 5, Learned: 4, ContributionLimit: 1, UnitBudget: 2, Exploration: 3, Overflow: 4, NoLoggedReward: 5, NotMatched: 6, NanoRho: 7}}
}

// TestFullSetsEveryField: full() sets every field of every struct type
// it holds, nested ones too, to a value other than its zero somewhere
// (gob does not write a zero field, so that a field left zero would be
// tested by neither the round trip nor testdata/version2.hex).
func TestFullSetsEveryField(t *testing.T) {
	set := map[string]bool{} // "type.field": set somewhere
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().String() + "." + v.Type().Field(i).Name
				set[f] = set[f] || !v.Field(i).IsZero()
				walk(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(full()))
	for f, ok := range set {
		if !ok {
			t.Errorf("full() leaves %s zero", f)
		}
	}
	if len(set) < 50 {
		t.Errorf("only %d fields walked: %v", len(set), set)
	}
}

// def returns the definition full() is a snapshot of, with settings.
func def(settings ...define.Setting) define.Definition {
	return define.Definition{Spec: define.Spec{Algorithm: "dp-se", Arms: 2}, Settings: settings}
}

// TestRoundTrip: what Encode stores, Decode returns, its Version set to
// this layout's whatever the caller's (0 here), at the store's Seq, with
// the SHA-256 of its bytes.
func TestRoundTrip(t *testing.T) {
	in := full()
	in.Version = 0
	st, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(st.State); st.Seq != 41 || !bytes.Equal(st.Sum, sum[:]) {
		t.Fatalf("stored at operation %d with sum %x, want 41 and %x", st.Seq, st.Sum, sum)
	}
	out, err := Decode(def(), st)
	if err != nil {
		t.Fatal(err)
	}
	if want := full(); !reflect.DeepEqual(*out, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", *out, want)
	}
}

// goldenSum is the SHA-256 of testdata/version2.hex's bytes.
const goldenSum = "2ac88d22781b0e49aa22dc212c6ae4b81885fbd77d85a926717d0629101771f9"

// TestDecodeStoredByEngine: a snapshot stored before this package existed
// loads. testdata/version2.hex is full() as the engine encoded it at
// commit d2f1d98 (its unexported types engine.snapshot and engine.slot,
// its engine.Counts and engine.Sample; gob writes their names): gob
// matches fields by name, so a renamed field, or one of another type,
// fails here.
func TestDecodeStoredByEngine(t *testing.T) {
	h, err := os.ReadFile("testdata/version2.hex")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(string(bytes.TrimSpace(h)))
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := hex.DecodeString(goldenSum)
	out, err := Decode(def(), &store.Snapshot{Seq: 41, State: b, Sum: sum})
	if err != nil {
		t.Fatal(err)
	}
	if want := full(); !reflect.DeepEqual(*out, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", *out, want)
	}
}

// TestDecodeRefuses: each check Decode makes refuses a snapshot that
// differs from a good one (full(), which TestRoundTrip decodes) in that
// check's respect alone, with ErrBad.
func TestDecodeRefuses(t *testing.T) {
	sealed := func(edit func(*Snapshot)) *store.Snapshot {
		sn := full()
		edit(&sn)
		st, err := seal(sn)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	good := sealed(func(*Snapshot) {})
	// version1 is a snapshot of version 1's layout: Unfreed a list.
	version1 := func() *store.Snapshot {
		b, err := state.Encode(struct {
			Version   int
			Algorithm string
			Seq       int64
			Pulls     []int64
			Unfreed   []int64
		}{1, "dp-se", 41, []int64{12, 18}, []int64{21, 39}})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return &store.Snapshot{Seq: 41, State: b, Sum: sum[:]}
	}
	resum := func(b []byte) *store.Snapshot {
		sum := sha256.Sum256(b)
		return &store.Snapshot{Seq: 41, State: b, Sum: sum[:]}
	}
	flip := func(b []byte, i int) []byte {
		b = slices.Clone(b)
		b[i] ^= 1
		return b
	}
	for _, c := range []struct {
		name string
		def  define.Definition
		st   *store.Snapshot
	}{
		{"a changed byte", def(), &store.Snapshot{Seq: 41, State: flip(good.State, len(good.State)/2), Sum: good.Sum}},
		{"a changed checksum", def(), &store.Snapshot{Seq: 41, State: good.State, Sum: flip(good.Sum, 0)}},
		{"no checksum", def(), &store.Snapshot{Seq: 41, State: good.State}},
		{"not a snapshot", def(), resum([]byte("not gob"))},
		{"cut short", def(), resum(good.State[:len(good.State)-8])},
		{"version 1's layout", def(), version1()},
		{"version 1", def(), sealed(func(sn *Snapshot) { sn.Version = 1 })},
		{"version 3", def(), sealed(func(sn *Snapshot) { sn.Version = 3 })},
		{"another algorithm", def(), sealed(func(sn *Snapshot) { sn.Algorithm = "dp-ucb" })},
		// The definition's algorithm at operation 42, the one after
		// the snapshot: a change at operation 41 is in it.
		{"the algorithm changed at its operation", def(define.Setting{From: 41, Algorithm: "dp-ucb"}), good},
		{"stored at another operation", def(), &store.Snapshot{Seq: 40, State: good.State, Sum: good.Sum}},
		{"another number of arms", def(), sealed(func(sn *Snapshot) { sn.Pulls = append(sn.Pulls, 0) })},
		{"a negative operation", def(), sealed(func(sn *Snapshot) { sn.Seq = -1 })},
		{"negative releases", def(), sealed(func(sn *Snapshot) { sn.Releases = -1 })},
		{"negative draws", def(), sealed(func(sn *Snapshot) { sn.Draws = -1 })},
	} {
		sn, err := Decode(c.def, c.st)
		if !errors.Is(err, ErrBad) || sn != nil {
			t.Errorf("%s: %+v, %v; want ErrBad", c.name, sn, err)
		}
	}
}

// TestAlgorithmAfterSnapshot: the algorithm a snapshot is checked
// against is the definition's at the operation after it: a change of
// algorithm after the snapshot's operation does not refuse it (its
// replay applies the change), and one before it must be in it.
func TestAlgorithmAfterSnapshot(t *testing.T) {
	st, err := Encode(full())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(def(define.Setting{From: 42, Algorithm: "dp-ucb"}), st); err != nil {
		t.Fatalf("a change after the snapshot: %v", err)
	}
	sn := full()
	sn.Algorithm = "dp-ucb"
	if st, err = Encode(sn); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(def(define.Setting{From: 12, Algorithm: "dp-ucb"}), st); err != nil {
		t.Fatalf("a change before the snapshot: %v", err)
	}
}

// TestMarkAndTickets: the history after a snapshot starts at its
// operation, releases and random words, with its pending events, whose
// tickets it gives back by their seqs.
func TestMarkAndTickets(t *testing.T) {
	sn := full()
	sn.Slots = append(sn.Slots, Slot{Event: 40, Ticket: bandit.Ticket{Arm: 0, Plan: 3, Seq: 29}})
	want := store.Mark{Seq: 41, Releases: 3, Draws: 17, Pending: []int64{39, 40}}
	if got := sn.Mark(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Mark: %+v, want %+v", got, want)
	}
	tks := map[int64]bandit.Ticket{39: {Arm: 1, Plan: 2, Seq: 28}, 40: {Arm: 0, Plan: 3, Seq: 29}}
	if got := sn.Tickets(); !reflect.DeepEqual(got, tks) {
		t.Fatalf("Tickets: %+v, want %+v", got, tks)
	}
}
