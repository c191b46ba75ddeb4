package linear

import (
	"testing"

	"github.com/dpbandit/dpbandit/internal/state/statetest"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestRestoreRefusesImpossibleStates: a phased state no run can reach is
// refused (state.ErrMismatch), so that the service replays the history
// instead: an action listed twice among the active ones would enter a
// phase's release twice; a schedule past its phase would read past the
// design. The state it was edited from restores, to the same bytes.
func TestRestoreRefusesImpossibleStates(t *testing.T) {
	l := instance(t, "linear-sphere:k=10,d=3", 1)
	b, _ := privacy.NewZCDP(1)
	g, err := NewGOPE(settingFor(l, 100000, 1), b, 0.05, 0.5, NoiseTheta)
	if err != nil {
		t.Fatal(err)
	}
	run(t, g, l, 50, 1)
	statetest.Refuses(t, g, map[string]func(s *phasedState){
		"action listed twice":  func(s *phasedState) { s.Active = []int{0, 0, 1} },
		"actions out of order": func(s *phasedState) { s.Active = []int{2, 1} },
		"unknown action":       func(s *phasedState) { s.DesActive = append(s.DesActive, 9) },
		"past the support":     func(s *phasedState) { s.Pos = len(s.Order) },
		"past the action":      func(s *phasedState) { s.Done = s.Counts[s.Order[s.Pos]] },
		"negative pulls":       func(s *phasedState) { s.Done = -1 },
	})
}
