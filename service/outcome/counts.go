package outcome

import (
	"slices"

	"github.com/dpbandit/dpbandit/service/store"
)

// Counts are the public counts of an experiment: its State shows them
// (their JSON is the answer's) and its snapshot holds them
// (service/snapshot, whose gob matches their fields by name).
type Counts struct {
	Decisions int64 `json:"decisions"`
	// Overflow counts the decisions taken outside the policy's plan,
	// which do not learn; Explored those whose arm, drawn by
	// exploration, is not the policy's (they do not learn either).
	Overflow  int64 `json:"overflow_decisions"`
	Explored  int64 `json:"explored_decisions"`
	Rewards   int64 `json:"rewards"`
	Learned   int64 `json:"learned"`
	Ignored   int64 `json:"ignored"`
	Defaulted int64 `json:"defaulted"`
	Expired   int64 `json:"expired"`
}

// Sample is the pulls per arm after some number of decisions (the
// dashboard's series, Sampled; held in the snapshot).
type Sample struct {
	Decisions int64
	Pulls     []int64
}

// Decided counts a decision, ev, in n: among the explored decisions if
// its arm was drawn by exploration (Explored), else among the overflow
// ones if it was taken outside the policy's plan.
func Decided(n *Counts, ev store.Event) {
	n.Decisions++
	switch {
	case Explored(ev):
		n.Explored++
	case ev.Plan == 0:
		n.Overflow++
	}
}

// Settled counts in n an event settled in status: a reward that came
// (Learned or Ignored) among the rewards too; a pending event counts
// nothing.
func Settled(n *Counts, status string) {
	switch status {
	case store.Learned:
		n.Learned++
	case store.Ignored:
		n.Ignored++
	case store.Defaulted:
		n.Defaulted++
	case store.Expired:
		n.Expired++
	}
	if status == store.Learned || status == store.Ignored {
		n.Rewards++
	}
}

// Awaiting returns the decisions of n that wait for a reward, so that
// decisions = rewards + defaulted + expired + awaiting.
func Awaiting(n Counts) int64 {
	return n.Decisions - n.Rewards - n.Defaulted - n.Expired
}

// Sampled returns series with a copy of pulls, the pulls per arm after
// decisions, appended when the series' geometric grid of decision counts
// asks for one: the first decision, then each at least 5% (and one)
// beyond the last sample.
func Sampled(series []Sample, decisions int64, pulls []int64) []Sample {
	if n := len(series); n == 0 || float64(decisions) >= 1.05*float64(series[n-1].Decisions)+1 {
		series = append(series, Sample{Decisions: decisions, Pulls: slices.Clone(pulls)})
	}
	return series
}
