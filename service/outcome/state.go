package outcome

import (
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/store"
)

// State is what the API shows of an experiment: its definition, public
// counts and released (noisy) statistics, never raw rewards.
type State struct {
	define.Definition
	Counts
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
	// Imported totals what imports of logs brought (package importer;
	// absent when none did).
	Imported *importer.Totals `json:"imported,omitempty"`
	// Replica is the replica serving the experiment (replicas only; ""
	// when none does at the moment).
	Replica string `json:"replica,omitempty"`
}

// ShowPolicy fills what st shows of pol, the experiment's policy built
// from the catalogue's algorithm spec: its plans (Episodes: those an
// episodic policy started, else the current plan's number), its pending
// slots, pooled and unreleased rewards (policy.Unreleased), its released
// statistics (bandit.Releaser) unless it failed (a failed policy may
// hold a draw it never stored), and its identification (Identify).
func (st *State) ShowPolicy(pol policy.Decider, algorithm string, failed bool) {
	_, st.PolicyVersion = pol.Plan()
	st.Episodes, st.Pending = st.PolicyVersion, pol.Pending()
	if ep, ok := pol.Policy().(bandit.Episodic); ok {
		st.Episodes = ep.Episodes()
	}
	if p, ok := policy.PoolsOf(pol); ok {
		st.Pooled = p.Pooled()
	}
	st.Unreleased, _ = policy.Unreleased(pol)
	if rl, ok := pol.Policy().(bandit.Releaser); ok && !failed {
		st.Released = rl.Released()
	}
	st.Identified = Identify(algorithm, pol.Policy())
}

// Identified is the outcome of a best-arm identification with fixed
// confidence (bandit.Identifier: adap-tt, dp-se-bai) once its stopping
// rule has fired: the recommended arm, the pulls it took, and the risk
// delta, the probability at most that it is not the best arm (for
// rewards drawn i.i.d. per arm, as the identification assumes). The rule
// reads only released, private statistics, so the stop and the winner are
// as private as the rest of the run. From then on the experiment takes no
// decisions (Stopped); rewards of decisions taken before still come.
type Identified struct {
	Arm   int     `json:"arm"`
	Pulls int64   `json:"after_pulls"`
	Delta float64 `json:"delta"`
}

// Identify returns the outcome of the identification that pol, the
// policy built from the catalogue's algorithm spec, runs: nil while it
// runs, or when pol identifies nothing (it is no bandit.Identifier).
// Delta is the spec's.
func Identify(algorithm string, pol any) *Identified {
	id, ok := pol.(bandit.Identifier)
	if !ok {
		return nil
	}
	arm, tau, ok := id.Decision()
	if !ok {
		return nil
	}
	a, err := catalog.Parse(algorithm) // (it built the policy)
	if err != nil {
		return nil
	}
	return &Identified{Arm: arm, Pulls: tau, Delta: a.Values["delta"]}
}

// Stopped returns the answer (Conflict) to a decision asked of
// experiment id once its identification has stopped.
func (w *Identified) Stopped(id string) error {
	return fault.Errorf(fault.Conflict, "experiment %q has identified arm %d as the best after %d pulls (wrong with probability at most %g): it takes no more decisions",
		id, w.Arm, w.Pulls, w.Delta)
}
