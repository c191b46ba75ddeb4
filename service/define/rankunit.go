package define

import (
	"encoding/json"

	"github.com/dpbandit/dpbandit/service/fault"
)

// RankUnit returns the privacy unit of a Personalizer rank (or
// multi-slot rank, or logged rank) for the event eventID whose
// contextFeatures are features: the value of the experiment's
// unit_feature there (UnitOf), or the event itself when it has none. A
// rank that lacks the feature is refused (fault.Invalid, naming the
// path), never taken as its own unit: that would change the privacy unit
// silently. It reads UnitFeature alone (a pointer receiver, as Key's).
func (d *Definition) RankUnit(features []json.RawMessage, eventID string) (string, error) {
	if d.UnitFeature == "" {
		return eventID, nil
	}
	return UnitOf(features, d.UnitFeature)
}

// CheckRankUnit checks, on an experiment with a unit_feature, that the
// unit a native /v1 decision or slate names (unit) is its context's
// (features): else the native API would debit another unit than the
// rank's user. It is fault.Invalid otherwise.
func (d *Definition) CheckRankUnit(unit string, features []json.RawMessage) error {
	if d.UnitFeature == "" {
		return nil
	}
	want, err := d.RankUnit(features, "")
	if err != nil {
		return err
	}
	if unit != want {
		return fault.Errorf(fault.Invalid, "unit_id %q differs from the context feature %q, %q (the experiment's privacy unit)", unit, d.UnitFeature, want)
	}
	return nil
}

// CheckContextUnit is CheckRankUnit for a native decision of stored
// context ctxt (a rank request, as CheckClientContext stored it).
func (d *Definition) CheckContextUnit(unit, ctxt string) error {
	if d.UnitFeature == "" {
		return nil
	}
	var req struct {
		ContextFeatures []json.RawMessage `json:"contextFeatures"`
	}
	if err := json.Unmarshal([]byte(ctxt), &req); err != nil {
		return fault.Errorf(fault.Invalid, "context: %v", err)
	}
	return d.CheckRankUnit(unit, req.ContextFeatures)
}
