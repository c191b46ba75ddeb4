package define

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/service/fault"
)

// maxCtx bounds a decision's context, in bytes.
const maxCtx = 64 << 10

// CheckContext validates a decision's context and returns it compacted,
// with the decision set of a contextual experiment: there it is required,
// Arms vectors of dimension Dim and norm at most 1. For a linear
// experiment it may be absent or a vector of the actions' dimension with
// norm at most 1; for a finite-armed one, absent or any JSON value. At
// most 64 KiB. The non-contextual policies do not use it: it is stored
// only for the log, with --keep-log.
func (d *Definition) CheckContext(raw json.RawMessage) (string, [][]float64, error) {
	if d.Surface == SurfacePersonalizer {
		return d.checkRank(raw)
	}
	if len(raw) == 0 || string(raw) == "null" {
		if d.Dim > 0 {
			return "", nil, fault.Errorf(fault.Invalid, "context is required: the decision set, %d vectors of dimension %d", d.Arms, d.Dim)
		}
		return "", nil, nil
	}
	if len(raw) > maxCtx {
		return "", nil, fault.Errorf(fault.TooLarge, "context larger than %d bytes", maxCtx)
	}
	var set [][]float64
	switch {
	case d.Dim > 0:
		if err := json.Unmarshal(raw, &set); err != nil {
			return "", nil, fault.Errorf(fault.Invalid, "context must be the decision set, %d vectors of numbers: %v", d.Arms, err)
		}
		if len(set) != d.Arms {
			return "", nil, fault.Errorf(fault.Invalid, "context has %d actions, the experiment has %d arms", len(set), d.Arms)
		}
		for i, v := range set {
			if err := checkVector(fmt.Sprintf("action %d", i), v, d.Dim); err != nil {
				return "", nil, err
			}
		}
	case len(d.Actions) > 0:
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", nil, fault.Errorf(fault.Invalid, "context must be a vector of numbers: %v", err)
		}
		if err := checkVector("context", v, len(d.Actions[0])); err != nil {
			return "", nil, err
		}
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", nil, fault.Errorf(fault.Invalid, "invalid context: %v", err)
	}
	return c.String(), set, nil
}

// checkVector checks a vector's dimension and that its norm is at most 1
// up to rounding: a vector of norm in (1, 1 + 1e-9] (a unit vector
// computed in floating point, say (cos t, sin t)) is scaled in place
// into the unit ball (mechanism.IntoUnitBall), which the policies then
// check exactly; a larger or non-finite one is an error.
func checkVector(name string, v []float64, d int) error {
	if len(v) != d {
		return fault.Errorf(fault.Invalid, "%s has dimension %d, want %d", name, len(v), d)
	}
	if n2 := linalg.Dot(v, v); !(n2 <= (1+1e-9)*(1+1e-9)) {
		return fault.Errorf(fault.Invalid, "%s has norm %.17g; it must be at most 1 (finite)", name, math.Sqrt(n2))
	}
	mechanism.IntoUnitBall(v)
	return nil
}
