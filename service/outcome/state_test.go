package outcome

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/policy"
)

// identifier is a policy whose identification has stopped (or not).
type identifier struct {
	arm  int
	tau  int64
	done bool
}

func (p identifier) Decision() (int, int64, bool) { return p.arm, p.tau, p.done }

// TestIdentify: an identification's outcome is nil for a policy that
// identifies nothing and while the rule has not fired; once it has, the
// arm, the pulls and the spec's delta; its stop refuses decisions with
// Conflict, naming the arm.
func TestIdentify(t *testing.T) {
	const spec = "adap-tt:delta=0.05"
	if w := Identify(spec, struct{}{}); w != nil {
		t.Fatalf("a policy that identifies nothing: %+v", w)
	}
	if w := Identify(spec, identifier{arm: 1, tau: 40}); w != nil {
		t.Fatalf("before the stop: %+v", w)
	}
	w := Identify(spec, identifier{arm: 1, tau: 40, done: true})
	if w == nil || *w != (Identified{Arm: 1, Pulls: 40, Delta: 0.05}) {
		t.Fatalf("after the stop: %+v, want arm 1 after 40 pulls at delta 0.05", w)
	}
	if b, _ := json.Marshal(w); string(b) != `{"arm":1,"after_pulls":40,"delta":0.05}` {
		t.Fatalf("its JSON: %s", b)
	}
	if err := w.Stopped("bai"); fault.Of(err) != fault.Conflict || !strings.Contains(err.Error(), `"bai" has identified arm 1`) {
		t.Fatalf("a decision after the stop: %v, want Conflict naming arm 1", err)
	}
}

// decider is a policy.Decider of fixed answers; its policy is pol.
type decider struct {
	policy.Decider
	pol any
}

func (d decider) Plan() (bandit.Plan, int64) { return bandit.Plan{}, 7 }
func (d decider) Pending() int64             { return 3 }
func (d decider) Policy() any                { return d.pol }

// shown is a policy that shows everything: episodes, releases, an
// identification, and its unreleased rewards.
type shown struct{ identifier }

func (shown) Episodes() int64            { return 5 }
func (shown) Released() []bandit.ArmStat { return []bandit.ArmStat{{Arm: 1, Samples: 2}} }
func (shown) Unreleased() (int64, bool)  { return 4, true }

// TestShowPolicy: the state shows the plan's number as the episodes of a
// policy that counts none, an episodic policy's own, the pending slots,
// the unreleased rewards, the released statistics but of a failed
// policy, and the identification.
func TestShowPolicy(t *testing.T) {
	var st State
	st.ShowPolicy(decider{pol: struct{}{}}, "ucb", false)
	if st.Episodes != 7 || st.PolicyVersion != 7 || st.Pending != 3 || st.Unreleased != 0 || st.Released != nil || st.Identified != nil {
		t.Fatalf("a plain policy: %+v", st)
	}
	for _, failed := range []bool{false, true} {
		st = State{}
		st.ShowPolicy(decider{pol: shown{identifier{arm: 2, tau: 9, done: true}}}, "adap-tt:delta=0.1", failed)
		if st.Episodes != 5 || st.PolicyVersion != 7 || st.Unreleased != 4 || st.Identified == nil || st.Identified.Arm != 2 {
			t.Fatalf("a policy that shows everything (failed %v): %+v", failed, st)
		}
		if (st.Released == nil) != failed {
			t.Fatalf("failed %v: released %v, want them shown only while it has not failed", failed, st.Released)
		}
	}
}
