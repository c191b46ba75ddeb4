package mab

import (
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state/statetest"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestReleasedEpisodeLeavesNoSum: once AdaC-UCB releases an episode's
// mean, the episode's rewards may be deleted (Unreleased reports none), so
// its state, and any snapshot of it, holds no sum of them.
func TestReleasedEpisodeLeavesNoSum(t *testing.T) {
	b, _ := privacy.NewZCDP(1)
	p, err := NewAdaCUCB(setting(3, &laplaceCounter{}), b, 4)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.Next()
	if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: pl.Count, Sum: 0.123456789}); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.Unreleased(); !ok || n != 0 {
		t.Fatalf("Unreleased() = %d, %v after the release", n, ok)
	}
	_, st := statetest.Of[doublingState](t, p)
	if st.Sum.F[0] != 0 || len(st.Sum.X) > 0 && st.Sum.X[0].Sign() != 0 {
		t.Errorf("a released episode's sum is kept: %v %v", st.Sum.F, st.Sum.X)
	}
}

// TestRestoreRefusesImpossibleStates: a state no run can reach is
// refused (state.ErrMismatch), so the service replays the history
// instead; in particular a DP-SE state that lists an arm twice would
// release that arm's epoch mean twice, at twice the budget.
func TestRestoreRefusesImpossibleStates(t *testing.T) {
	b, _ := privacy.NewPure(1)
	d, err := NewDPSE(setting(3, &laplaceCounter{}), b, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	statetest.Refuses(t, d, map[string]func(*dpseState){
		"DP-SE arm listed twice":  func(s *dpseState) { s.Active = []int{0, 0, 1} },
		"DP-SE arms out of order": func(s *dpseState) { s.Active = []int{2, 1} },
		"DP-SE past its epoch":    func(s *dpseState) { s.Done = s.R + 1 },
		"DP-SE negative pulls":    func(s *dpseState) { s.Done = -1 },
	})
	zb, _ := privacy.NewZCDP(1)
	u, err := NewAdaCUCB(setting(3, &laplaceCounter{}), zb, 4)
	if err != nil {
		t.Fatal(err)
	}
	u.Next()
	statetest.Refuses(t, u, map[string]func(*doublingState){
		"AdaC-UCB past its episode": func(s *doublingState) { s.Done = s.Target + 1 },
		"AdaC-UCB negative count":   func(s *doublingState) { s.Count = []int64{-1, 0, 0} },
	})
}
