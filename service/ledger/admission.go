package ledger

import (
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/reason"
)

// Admission is what was decided of a reward: why it is not learned (""
// when it is), what it debits its unit (nano-rho; 0 unless learned), and
// the unit's ledger entries it moved: Rewards, its learned rewards in the
// experiment, and Total, its total when a cap reserved the debit (nil
// otherwise), from which a refused reward's debit is refunded
// (Ledger.Refund).
type Admission struct {
	Reason         string
	Nano           int64
	Rewards, Total *Entry
}

// Cost returns what the next learned reward of a unit that has
// contributed n learned rewards to an experiment debits it, in nano-rho,
// or why it is not learned: once n reaches limit (the experiment's
// max_rewards_per_unit) it is reason.ContributionLimit, and nothing is
// debited. Otherwise the (n+1)-th reward costs define.Debit(nanoRho, n+1),
// (2(n+1)-1) times the experiment's cost of one reward, nanoRho (the
// unit's k rewards cost it k^2 of them in all: zCDP's group privacy), and
// twice that when double: its release is paid twice (the apprentice test's,
// rules.Apprentice.Doubles). The cap is the ledger's to check next (Fits,
// under Reserve).
func Cost(n, limit, nanoRho int64, double bool) (nano int64, why string) {
	if n >= limit {
		return 0, reason.ContributionLimit
	}
	nano = define.Debit(nanoRho, n+1)
	if double {
		nano *= 2
	}
	return nano, ""
}

// Fits reports whether a debit of nano keeps a unit's total within the
// cap (all in nano-rho; a cap of 0 is none), without the total
// overflowing (it stays at most 2^62).
func Fits(total, nano, cap int64) bool {
	return cap == 0 || !(total+nano > cap || total > 1<<62-nano)
}

// Reserved records the cap's answer to the reservation of a.Nano: total,
// the unit's entry it moved (nil: none), and ok, whether the debit stays
// within the cap. A reward the cap refuses is not learned
// (reason.UnitBudget) and debits nothing.
func (a *Admission) Reserved(total *Entry, ok bool) {
	a.Total = total
	if !ok {
		a.Reason, a.Nano = reason.UnitBudget, 0
	}
}
