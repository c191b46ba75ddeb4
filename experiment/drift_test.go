package experiment

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/privacy"
)

// TestBoundsRefuseDrifting: the finite-armed bounds are for stationary
// instances; on a drifting one they would be the bounds of its step-0
// means, so they are refused with a FieldError on env.
func TestBoundsRefuseDrifting(t *testing.T) {
	b, _ := privacy.NewZCDP(1)
	for _, spec := range []string{"piecewise-bernoulli:0.5,0.4/0.4,0.5@100", "drift-bernoulli:sine:0.5,0.5/0.3,-0.3@400"} {
		_, err := Bounds(spec, 1000, []privacy.Budget{b}, 1, 0.05)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "env" {
			t.Errorf("%s: %v, want a FieldError on env", spec, err)
		}
	}
	if _, err := Bounds("bernoulli:0.5,0.4", 1000, []privacy.Budget{b}, 1, 0.05); err != nil {
		t.Errorf("a stationary instance refused: %v", err)
	}
}
