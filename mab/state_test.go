package mab

import (
	"encoding"
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
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
	_, st := stateOf[doublingState](t, p)
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
	good, dst := stateOf[dpseState](t, d)
	zb, _ := privacy.NewZCDP(1)
	u, err := NewAdaCUCB(setting(3, &laplaceCounter{}), zb, 4)
	if err != nil {
		t.Fatal(err)
	}
	u.Next()
	raw, ust := stateOf[doublingState](t, u)
	for _, c := range []struct {
		name   string
		target encoding.BinaryUnmarshaler
		edit   func() any
	}{
		{"DP-SE arm listed twice", d, func() any { s := dst; s.Active = []int{0, 0, 1}; return s }},
		{"DP-SE arms out of order", d, func() any { s := dst; s.Active = []int{2, 1}; return s }},
		{"DP-SE past its epoch", d, func() any { s := dst; s.Done = s.R + 1; return s }},
		{"DP-SE negative pulls", d, func() any { s := dst; s.Done = -1; return s }},
		{"AdaC-UCB past its episode", u, func() any { s := ust; s.Done = s.Target + 1; return s }},
		{"AdaC-UCB negative count", u, func() any { s := ust; s.Count = []int64{-1, 0, 0}; return s }},
	} {
		b, err := state.Encode(c.edit())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.target.UnmarshalBinary(b); !errors.Is(err, state.ErrMismatch) {
			t.Errorf("%s: restored (err %v)", c.name, err)
		}
	}
	// The states they were edited from restore.
	if err := d.UnmarshalBinary(good); err != nil {
		t.Error(err)
	}
	if err := u.UnmarshalBinary(raw); err != nil {
		t.Error(err)
	}
}

// stateOf returns p's snapshot and the state it decodes to.
func stateOf[S any](t *testing.T, p encoding.BinaryMarshaler) ([]byte, S) {
	t.Helper()
	raw, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var st S
	if err := state.Decode(raw, &st); err != nil {
		t.Fatal(err)
	}
	return raw, st
}
