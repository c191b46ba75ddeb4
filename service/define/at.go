package define

import "encoding/json"

// What a definition says of an operation already made, under the
// settings it was made under (Effective): the engine asks it when it
// answers about, or replays, an old decision.

// Propensities returns, for a decision of operation seq among k eligible
// actions whose policy arm was policyArm, the probability with which the
// logging policy of its operation (the settings then, not the current
// ones) gives each of them (PropensityOf).
func (d Definition) Propensities(seq int64, policyArm, k int) []float64 {
	at, _ := d.Effective(seq)
	p := make([]float64, k)
	for j := range p {
		p[j] = at.PropensityOf(j, policyArm, k)
	}
	return p
}

// LoggingOnlyAt reports whether the decision of operation seq was taken
// in logging only mode (ModeLoggingOnly, a Personalizer experiment's
// setting): it was no policy's, and its reward is never learned.
func (d Definition) LoggingOnlyAt(seq int64) bool {
	if d.Surface != SurfacePersonalizer || len(d.Settings) == 0 {
		return false
	}
	_, cur := d.Effective(seq)
	return cur.Mode == ModeLoggingOnly
}

// StoredSet returns the decision set of a contextual experiment's stored
// context ctxt, read as when it was decided (CheckContext: the same
// checks, a rank's features hashed and rounded alike); nil for the other
// experiments, whose decisions have none.
func (d *Definition) StoredSet(ctxt string) ([][]float64, error) {
	if d.Dim == 0 {
		return nil, nil
	}
	_, set, err := d.CheckContext(json.RawMessage(ctxt))
	return set, err
}
