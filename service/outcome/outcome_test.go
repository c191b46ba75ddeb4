package outcome

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestAnswersOfAnEvent: a decision's answer carries the event's id, arm,
// propensity and plan (learning unless the plan is 0), and its policy
// arm and operation, which its JSON does not show; a reward's answer is
// learned for Learned and Defaulted only, with the event's reason.
func TestAnswersOfAnEvent(t *testing.T) {
	ev := store.Event{Seq: 9, ID: "e1", Arm: 2, PolicyArm: 1, PScore: 0.25, Plan: 4, Status: store.Ignored, Reason: reason.Exploration}
	d := DecisionOf(ev)
	if want := (Decision{EventID: "e1", Arm: 2, Probability: 0.25, PolicyVersion: 4, Learns: true, PolicyArm: 1, Seq: 9}); d != want {
		t.Fatalf("DecisionOf: %+v, want %+v", d, want)
	}
	b, err := json.Marshal(d)
	if want := `{"event_id":"e1","arm":2,"probability":0.25,"policy_version":4,"learns":true}`; err != nil || string(b) != want {
		t.Fatalf("a decision's JSON: %s (%v), want %s", b, err, want)
	}
	if ev.Plan = 0; DecisionOf(ev).Learns {
		t.Fatal("an overflow decision (plan 0) learns")
	}
	for status, learned := range map[string]bool{store.Pending: false, store.Learned: true, store.Defaulted: true, store.Ignored: false, store.Expired: false} {
		ev.Status = status
		if r := ResultOf(ev); r != (RewardResult{EventID: "e1", Status: status, Learned: learned, Reason: reason.Exploration}) {
			t.Errorf("ResultOf %s: %+v, want learned %v", status, r, learned)
		}
	}
	b, err = json.Marshal(RewardResult{EventID: "e1", Status: store.Learned, Learned: true})
	if want := `{"event_id":"e1","status":"learned","learned":true}`; err != nil || string(b) != want {
		t.Fatalf("a reward's JSON: %s (%v), want %s", b, err, want)
	}
}

// TestExplored: a decision was explored when its arm is not the policy's
// own; a decision with no policy arm (-1: apprentice mode's baseline,
// logging only) was not.
func TestExplored(t *testing.T) {
	for _, c := range []struct {
		arm, policyArm int
		want           bool
	}{{2, 2, false}, {2, 1, true}, {0, 1, true}, {2, -1, false}} {
		if got := Explored(store.Event{Arm: c.arm, PolicyArm: c.policyArm}); got != c.want {
			t.Errorf("arm %d, policy arm %d: explored %v, want %v", c.arm, c.policyArm, got, c.want)
		}
	}
}

// TestSettle: a reward refused (a reason) is Ignored and not learned, a
// default refused Expired; an unrefused one keeps its status, learned
// unless Expired (no reward came).
func TestSettle(t *testing.T) {
	for _, c := range []struct {
		status, reason, want string
		learn                bool
	}{
		{store.Learned, "", store.Learned, true},
		{store.Defaulted, "", store.Defaulted, true},
		{store.Expired, "", store.Expired, false},
		{store.Learned, reason.Overflow, store.Ignored, false},
		{store.Learned, reason.NotActivated, store.Ignored, false},
		{store.Defaulted, reason.NotActivated, store.Expired, false},
		{store.Defaulted, "unit_budget", store.Expired, false},
	} {
		got, learn := Settle(c.status, c.reason)
		if got != c.want || learn != c.learn {
			t.Errorf("Settle(%s, %q) = %s, %v; want %s, %v", c.status, c.reason, got, learn, c.want, c.learn)
		}
	}
}

// TestRetried: a reward for an event settled with one gets its result
// again (whatever its value); one settled without (Defaulted, Expired)
// refuses it with Conflict.
func TestRetried(t *testing.T) {
	for _, status := range []string{store.Learned, store.Ignored} {
		ev := store.Event{ID: "e", Status: status, Reason: "r"}
		if res, err := Retried(ev); err != nil || res != ResultOf(ev) {
			t.Errorf("%s: %+v, %v; want its result", status, res, err)
		}
	}
	for _, status := range []string{store.Defaulted, store.Expired} {
		if res, err := Retried(store.Event{ID: "e", Status: status}); fault.Of(err) != fault.Conflict || res != (RewardResult{}) {
			t.Errorf("%s: %+v, %v; want Conflict", status, res, err)
		}
	}
}

// TestCounts: the tally of decisions and settlements, and the identity
// decisions = rewards + defaulted + expired + awaiting.
func TestCounts(t *testing.T) {
	var n Counts
	Decided(&n, store.Event{Arm: 1, PolicyArm: 1, Plan: 3})  // the policy's
	Decided(&n, store.Event{Arm: 0, PolicyArm: 1, Plan: 3})  // explored
	Decided(&n, store.Event{Arm: 0, PolicyArm: 0, Plan: 0})  // overflow
	Decided(&n, store.Event{Arm: 0, PolicyArm: -1, Plan: 0}) // no policy arm, overflow
	Decided(&n, store.Event{Arm: 2, PolicyArm: 0, Plan: 0})  // explored, not counted twice
	Decided(&n, store.Event{Arm: 2, PolicyArm: 2, Plan: 1})
	for _, s := range []string{store.Learned, store.Ignored, store.Defaulted, store.Expired, store.Pending} {
		Settled(&n, s)
	}
	want := Counts{Decisions: 6, Explored: 2, Overflow: 2, Rewards: 2, Learned: 1, Ignored: 1, Defaulted: 1, Expired: 1}
	if n != want {
		t.Fatalf("counts %+v, want %+v", n, want)
	}
	if a := Awaiting(n); a != 2 {
		t.Fatalf("awaiting %d, want the 2 decisions without a settlement", a)
	}
}

// TestSampled: the dashboard's series samples on a geometric grid, each
// sample at least 5% and one decision beyond the last, copying the pulls.
func TestSampled(t *testing.T) {
	var series []Sample
	pulls := []int64{0, 0}
	for d := int64(1); d <= 60; d++ {
		pulls[d%2]++
		series = Sampled(series, d, pulls)
	}
	var at []int64
	for _, s := range series {
		at = append(at, s.Decisions)
		if s.Pulls[0]+s.Pulls[1] != s.Decisions {
			t.Fatalf("sample at %d holds pulls %v: not a copy of the pulls then", s.Decisions, s.Pulls)
		}
	}
	if want := []int64{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 24, 27, 30, 33, 36, 39, 42, 46, 50, 54, 58}; !slices.Equal(at, want) {
		t.Fatalf("samples at %v, want %v", at, want)
	}
}
