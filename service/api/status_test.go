package api

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
)

// TestEveryKindHasAStatus: every kind of error the engine may return
// maps to its own HTTP status (status), none to 0 or to another's.
func TestEveryKindHasAStatus(t *testing.T) {
	seen := map[int]fault.Kind{}
	for k := fault.Internal; k <= fault.Unavailable; k++ {
		code, _ := status(fault.Errorf(k, "x"))
		if code < 400 {
			t.Errorf("kind %d maps to %d", k, code)
		}
		if o, dup := seen[code]; dup {
			t.Errorf("kinds %d and %d both map to %d", o, k, code)
		}
		seen[code] = k
	}
	if code, _ := status(errors.New("plain")); code != 500 {
		t.Errorf("an error without a kind maps to %d, want 500", code)
	}
}
