package linear

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/internal/state"
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
	good, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var st phasedState
	if err := state.Decode(good, &st); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(s *phasedState){
		"action listed twice":  func(s *phasedState) { s.Active = []int{0, 0, 1} },
		"actions out of order": func(s *phasedState) { s.Active = []int{2, 1} },
		"unknown action":       func(s *phasedState) { s.DesActive = append(s.DesActive, 9) },
		"past the support":     func(s *phasedState) { s.Pos = len(s.Order) },
		"past the action":      func(s *phasedState) { s.Done = s.Counts[s.Order[s.Pos]] },
		"negative pulls":       func(s *phasedState) { s.Done = -1 },
	} {
		s := st
		s.Active, s.DesActive, s.Counts = append([]int(nil), st.Active...), append([]int(nil), st.DesActive...), append([]int64(nil), st.Counts...)
		edit(&s)
		raw, err := state.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.UnmarshalBinary(raw); !errors.Is(err, state.ErrMismatch) {
			t.Errorf("%s: restored (err %v)", name, err)
		}
	}
	if err := g.UnmarshalBinary(good); err != nil {
		t.Fatal(err)
	}
	again, err := g.MarshalBinary()
	if err != nil || string(again) != string(good) {
		t.Errorf("restored state saves differently (%v)", err)
	}
}
