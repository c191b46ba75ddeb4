package ledger

import (
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestDebtsTakeSortedAndForgotten: a unit's debits add up (a reward and
// its cost each), Take returns one row a unit sorted by unit, and
// forgets them: a second Take has none.
func TestDebtsTakeSortedAndForgotten(t *testing.T) {
	d := Debts{}
	d.Add("b", 3)
	d.Add("a", 1)
	d.Add("b", 9)
	d.Add("c", 0)
	want := []store.Debit{{Unit: "a", Rewards: 1, Nano: 1}, {Unit: "b", Rewards: 2, Nano: 12}, {Unit: "c", Rewards: 1, Nano: 0}}
	if got := d.Take(); !slices.Equal(got, want) {
		t.Fatalf("Take: %+v, want %+v", got, want)
	}
	if got := d.Take(); len(got) != 0 || len(d) != 0 {
		t.Fatalf("second Take: %+v (%d left), want none", got, len(d))
	}
	d.Add("a", 5)
	if got := d.Take(); !slices.Equal(got, []store.Debit{{Unit: "a", Rewards: 1, Nano: 5}}) {
		t.Fatalf("after a new debit: %+v", got)
	}
}

// TestCost: a unit's k-th learned reward costs 2k - 1 times one reward's
// cost (k rewards cost k^2: define.Debit), twice that when the apprentice
// test releases it, and nothing once the unit has contributed the
// limit, which refuses it.
func TestCost(t *testing.T) {
	const nano = 1000
	for _, c := range []struct {
		n, limit int64
		double   bool
		nano     int64
		reason   string
	}{
		{0, 1, false, nano, ""},
		{0, 1, true, 2 * nano, ""},
		{1, 1, false, 0, reason.ContributionLimit},
		{1, 1, true, 0, reason.ContributionLimit},
		{1, 3, false, 3 * nano, ""},
		{2, 3, false, 5 * nano, ""},
		{2, 3, true, 10 * nano, ""},
		{3, 3, false, 0, reason.ContributionLimit},
		{7, 3, false, 0, reason.ContributionLimit},
	} {
		got, reason := Cost(c.n, c.limit, nano, c.double)
		if got != c.nano || reason != c.reason {
			t.Errorf("Cost(%d, limit %d, double %v) = %d, %q; want %d, %q", c.n, c.limit, c.double, got, reason, c.nano, c.reason)
		}
	}
	var sum int64
	for k := range int64(4) {
		n, _ := Cost(k, 4, nano, false)
		sum += n
	}
	if sum != 16*nano {
		t.Errorf("4 rewards of a unit cost %d, want 4^2 = 16 rewards' cost, %d", sum, 16*nano)
	}
}

// TestFits: a debit fits while the total stays at most the cap (equal
// fits), any fits without a cap, and a total that would pass 2^62 never
// does (no overflow past the cap's test).
func TestFits(t *testing.T) {
	for _, c := range []struct {
		total, nano, cap int64
		want             bool
	}{
		{0, 10, 10, true},
		{1, 10, 10, false},
		{5, 5, 10, true},
		{6, 5, 10, false},
		{1 << 40, 1 << 40, 0, true},
		{1<<62 - 10, 11, math.MaxInt64, false},
		{1<<62 - 10, 10, math.MaxInt64, true},
		{math.MaxInt64 - 1, 10, math.MaxInt64, false}, // total+nano wraps negative
	} {
		if got := Fits(c.total, c.nano, c.cap); got != c.want {
			t.Errorf("Fits(%d, %d, cap %d) = %v, want %v", c.total, c.nano, c.cap, got, c.want)
		}
	}
}

// TestReserved: the cap's refusal makes the reward unit_budget and
// debits nothing; its acceptance keeps the cost; both keep the entry the
// reservation moved, for a refund.
func TestReserved(t *testing.T) {
	e := &Entry{N: 7}
	a := Admission{Nano: 30}
	a.Reserved(e, true)
	if a.Reason != "" || a.Nano != 30 || a.Total != e {
		t.Fatalf("accepted: %+v", a)
	}
	a = Admission{Nano: 30}
	a.Reserved(e, false)
	if a.Reason != reason.UnitBudget || a.Nano != 0 || a.Total != e {
		t.Fatalf("refused: %+v", a)
	}
}
