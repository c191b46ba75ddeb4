package engine

import (
	"encoding/json"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
)

// rankUnit returns the privacy unit of a Personalizer rank (or
// multi-slot rank, or logged rank) for the event eventID whose
// contextFeatures are features: the value of the experiment's
// unit_feature there (define.UnitOf), or the event itself when it has
// none. A rank that lacks the feature is refused (fault.Invalid, naming
// the path), never taken as its own unit: that would change the privacy
// unit silently.
func (x *Experiment) rankUnit(features []json.RawMessage, eventID string) (string, error) {
	if x.def.UnitFeature == "" {
		return eventID, nil
	}
	return define.UnitOf(features, x.def.UnitFeature)
}

// loggedUnit sets the unit of a logged rank l from its contextFeatures,
// when the experiment has a unit_feature; a record that names another
// unit is refused.
func (x *Experiment) loggedUnit(l *Logged, features []json.RawMessage) error {
	if x.def.UnitFeature == "" {
		return nil
	}
	unit, err := x.rankUnit(features, l.ID)
	if err != nil {
		return err
	}
	if l.Unit != "" && l.Unit != unit {
		return fault.Errorf(fault.Invalid, "the record's unit %q differs from its context feature %q, %q (the experiment's privacy unit)", l.Unit, x.def.UnitFeature, unit)
	}
	l.Unit = unit
	return nil
}

// checkGivenUnit checks, on an experiment with a unit_feature, that the
// unit a native /v1 decision or slate names (unit) is its context's
// (features): else the native API would debit another unit than the
// rank's user. It is fault.Invalid otherwise.
func (x *Experiment) checkGivenUnit(unit string, features []json.RawMessage) error {
	if x.def.UnitFeature == "" {
		return nil
	}
	want, err := x.rankUnit(features, "")
	if err != nil {
		return err
	}
	if unit != want {
		return fault.Errorf(fault.Invalid, "unit_id %q differs from the context feature %q, %q (the experiment's privacy unit)", unit, x.def.UnitFeature, want)
	}
	return nil
}

// checkDecideUnit is checkGivenUnit for a native decision of stored
// context ctxt (a rank request, as CheckContext stored it).
func (x *Experiment) checkDecideUnit(unit, ctxt string) error {
	if x.def.UnitFeature == "" {
		return nil
	}
	var req struct {
		ContextFeatures []json.RawMessage `json:"contextFeatures"`
	}
	if err := json.Unmarshal([]byte(ctxt), &req); err != nil {
		return fault.Errorf(fault.Invalid, "context: %v", err)
	}
	return x.checkGivenUnit(unit, req.ContextFeatures)
}
