package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
)

// State is what the API shows of an experiment: its definition, public
// counts and released (noisy) statistics, never raw rewards.
type State struct {
	define.Definition
	snapshot.Counts
	// Episodes is the number of plans the policy has started.
	Episodes int64 `json:"episodes"`
	// PolicyVersion is the current plan's number.
	PolicyVersion int64 `json:"policy_version"`
	// Pending counts the current plan's decisions waiting for a reward;
	// Awaiting every decision waiting for one (overflow and explored
	// ones too), so that decisions = rewards + defaulted + expired +
	// awaiting.
	Pending  int64 `json:"pending"`
	Awaiting int64 `json:"awaiting_rewards"`
	// Pooled counts the rewards learned that wait for their arm's next
	// plan to enter a release (bandit.Pooled; experiments created
	// before it have none).
	Pooled int64 `json:"pooled_rewards"`
	// Unreleased counts the learned rewards that no release covers yet:
	// without --keep-log they are the only rewards the store holds, each
	// deleted once a release covers it (data minimisation).
	Unreleased int64 `json:"unreleased_rewards"`
	// Pulls counts decisions per arm.
	Pulls []int64 `json:"pulls"`
	// Released are the arms' released statistics, for policies that
	// show them (bandit.Releaser).
	Released []bandit.ArmStat `json:"released,omitempty"`
	// Identified is a best-arm identification's outcome once its
	// stopping rule has fired (nil before, and for other policies).
	Identified *Identified `json:"identified,omitempty"`
	// Failed says why the experiment stopped (503), if it did.
	Failed string `json:"failed,omitempty"`
	// Releases counts every release; Recent are the last ones.
	Releases int             `json:"releases"`
	Recent   []store.Release `json:"recent_releases"`
	// Apprentice is apprentice mode's test, while the experiment is in
	// it (rules.Apprentice).
	Apprentice *rules.ApprenticeState `json:"apprentice,omitempty"`
	// Imported totals what imports of logs brought (importhooks.go; absent
	// when none did).
	Imported *importer.Totals `json:"imported,omitempty"`
	// Replica is the replica serving the experiment (replicas only; ""
	// when none does at the moment).
	Replica string `json:"replica,omitempty"`
}

// State returns what the API shows of an experiment, once every change
// it reflects is durable: a release is shown only after it is stored.
func (x *Experiment) State(ctx context.Context) (State, error) {
	st, last := x.view()
	// A change whose submit failed is in the snapshot, never in the
	// store; the writer had failed before that submit returned, and the
	// snapshot was taken after (both under x.mu): checked here, it is
	// seen.
	if err := x.env.Writer.Failed(); err != nil {
		return State{}, fault.Errorf(fault.Unavailable, "the service stopped after a store failure; its memory may be ahead of the store, so it shows nothing: %v", err)
	}
	if last != nil {
		if err := x.env.Writer.Wait(ctx, last); err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// view returns the experiment's state and the durable channel of the
// last change it reflects.
func (x *Experiment) view() (State, chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pol == nil { // it failed to load: only why
		return State{Definition: x.def, Failed: x.failed.Error()}, nil
	}
	_, v := x.pol.Plan()
	st := State{Definition: x.def, Counts: x.n, Episodes: v, PolicyVersion: v, Pending: x.pol.Pending(),
		Awaiting: x.n.Decisions - x.n.Rewards - x.n.Defaulted - x.n.Expired,
		Pulls:    append([]int64(nil), x.pulls...), Releases: int(x.nrel)}
	if ep, ok := x.pol.Policy().(bandit.Episodic); ok {
		st.Episodes = ep.Episodes()
	}
	if p, ok := policy.Pooled(x.pol); ok {
		st.Pooled = p.Pooled()
	}
	st.Unreleased, _ = x.unreleased()
	if rl, ok := x.pol.Policy().(bandit.Releaser); ok && x.failed == nil {
		// (a failed policy may hold a draw it never stored)
		st.Released = rl.Released()
	}
	st.Recent = append([]store.Release{}, x.recent...)
	if imp := x.imported; imp != (importer.Totals{}) {
		st.Imported = &imp
	}
	st.Identified = x.identified()
	st.Apprentice = x.appr.State()
	if x.failed != nil {
		st.Failed = x.failed.Error()
	}
	return st, x.last
}
