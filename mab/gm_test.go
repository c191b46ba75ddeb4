package mab

import (
	"errors"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// gmFeed gives the policy one pull of each (arm, reward).
func gmFeed(t *testing.T, p bandit.Policy, pulls [][2]float64) {
	t.Helper()
	for _, f := range pulls {
		if err := p.Update(bandit.Feedback{Arm: int(f[0]), Count: 1, Sum: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
}

// near fails unless got = want to 1e-12 (relative).
func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

// TestGMConstants: Garivier and Moulines' indices, by hand, on rewards in
// [1, 3] (B = 2, so that a missing or doubled B shows): sliding window
// X_t(tau, i) + B sqrt(xi ln(min(t, tau))/N_t(tau, i)) before and after
// the window slides (ln t instead of ln(min(t, tau)) shows at t = 6), and
// discounted X_t(gamma, i) + 2B sqrt(xi ln n_t(gamma)/N_t(gamma, i)); the
// tuned window and discount against numbers worked out by hand.
func TestGMConstants(t *testing.T) {
	s := bandit.Setting{Arms: 2, Bounds: mechanism.Bounds{Lo: 1, Hi: 3}}
	const xi = 0.7
	sw, err := NewSWUCB(s, privacy.None(), 4, xi, "")
	if err != nil {
		t.Fatal(err)
	}
	gmFeed(t, sw, [][2]float64{{0, 3}, {1, 1}, {0, 2}})
	// t = 4 next: arm 0 has (3, 2), arm 1 has (1); ln(min(4, 4)).
	near(t, "SW arm 0 at t=4", sw.index(0), 2.5+2*math.Sqrt(xi*math.Log(4)/2))
	near(t, "SW arm 1 at t=4", sw.index(1), 1+2*math.Sqrt(xi*math.Log(4)/1))
	gmFeed(t, sw, [][2]float64{{1, 3}, {1, 3}})
	// t = 6 next: the first pull (arm 0, 3) left the window.
	near(t, "SW arm 0 at t=6", sw.index(0), 2+2*math.Sqrt(xi*math.Log(4)/1))
	near(t, "SW arm 1 at t=6", sw.index(1), 7.0/3+2*math.Sqrt(xi*math.Log(4)/3))
	if got := sw.Next().Arm; got != 0 {
		t.Errorf("SW plays arm %d, want 0 (index %.4f against %.4f)", got, sw.index(0), sw.index(1))
	}

	du, err := NewDUCB(s, 0.5, xi)
	if err != nil {
		t.Fatal(err)
	}
	if du.Next().Arm != 0 {
		t.Error("D-UCB does not start with arm 0")
	}
	gmFeed(t, du, [][2]float64{{0, 3}, {1, 1}, {0, 2}})
	// N(0) = 0.25 + 1, sum 0.25*3 + 2; N(1) = 0.5, sum 0.5*1; n = 1.75.
	near(t, "D arm 0", du.index(0), 2.75/1.25+2*2*math.Sqrt(xi*math.Log(1.75)/1.25))
	near(t, "D arm 1", du.index(1), 0.5/0.5+2*2*math.Sqrt(xi*math.Log(1.75)/0.5))

	// 2 sqrt(10^4 ln 10^4 / 4) = 303.49; B = 2 doubles it.
	for _, c := range []struct {
		B    float64
		want int64
	}{{1, 304}, {2, 607}} {
		if got, err := GMWindow(10000, 4, c.B); err != nil || got != c.want {
			t.Errorf("GMWindow(10^4, 4, %v) = %d, %v; want %d", c.B, got, err, c.want)
		}
	}
	// 1 - sqrt(4/10^4)/(4B) = 1 - 0.02/(4B).
	for _, c := range []struct{ B, want float64 }{{1, 0.995}, {2, 0.9975}} {
		got, err := GMDiscount(10000, 4, c.B)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "GMDiscount", got, c.want)
	}
	if _, err := GMWindow(1, 1, 1); !errors.Is(err, mechanism.ErrInput) {
		t.Error("a window for T = 1 accepted")
	}
	if _, err := GMDiscount(100, 0, 1); !errors.Is(err, mechanism.ErrInput) {
		t.Error("a discount for 0 breakpoints accepted")
	}
	if _, err := GMDiscount(1, 1, 0.1); !errors.Is(err, mechanism.ErrInput) {
		t.Error("a discount of 1 - 1/0.4 < 0 accepted")
	}
}
