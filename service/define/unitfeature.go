package define

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/service/fault"
)

// The privacy unit of a Personalizer experiment (Spec.UnitFeature).
//
// Personalizer knows no user: by default each rank's event is its own
// unit. An experiment created with unit_feature "user.id" takes instead
// the value at that path in the rank's contextFeatures as the unit: the
// first context feature object with the top-level key "user", then its
// member "id". A string is taken as it is; a number as its JSON literal
// when that is an integer (exact, whatever its size), else as
// encoding/json writes the float64 it denotes (so 42, 42.0 and 4.2e1 are
// one unit). A rank without it, or with another type there, is refused:
// falling back to the event would change the privacy unit silently.
//
// Both ways of reading a rank request (the fast scanner, rankfast.go, and
// encoding/json) yield the same raw contextFeatures objects, and the unit
// is read from those, by UnitOf alone: the two paths agree by
// construction (TestUnitOfFastAndSlow).

// maxUnitFeatureDepth bounds a unit_feature path's segments (as
// maxFeatureDepth bounds a feature object's nesting).
const maxUnitFeatureDepth = 4

// CheckUnitFeature checks a unit_feature path ("" is none): 1 to
// maxUnitFeatureDepth non-empty segments separated by '.'.
func CheckUnitFeature(path string) error {
	if path == "" {
		return nil
	}
	segs := strings.Split(path, ".")
	if len(segs) > maxUnitFeatureDepth {
		return fault.Errorf(fault.Invalid, "unit_feature %q has %d segments: at most %d", path, len(segs), maxUnitFeatureDepth)
	}
	for i, s := range segs {
		if s == "" {
			return fault.Errorf(fault.Invalid, "unit_feature %q has an empty segment (%d)", path, i)
		}
	}
	return CheckID("unit_feature", path)
}

// UnitOf returns the unit of a rank whose contextFeatures are features,
// the value at the dotted path (see above), checked as any unit id
// (CheckPathID: its ledger is read at /v1/units/{unit}/ledger).
// Errors are fault.Invalid and name the path.
func UnitOf(features []json.RawMessage, path string) (string, error) {
	segs := strings.Split(path, ".")
	var val json.RawMessage
	found := false
	for _, f := range features {
		var obj map[string]json.RawMessage
		if json.Unmarshal(f, &obj) != nil {
			continue // (not an object: readRank refuses it anyway)
		}
		if v, ok := obj[segs[0]]; ok {
			val, found = v, true
			break
		}
	}
	for _, s := range segs[1:] {
		if !found {
			break
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(val, &obj) != nil || obj == nil {
			found = false
			break
		}
		val, found = obj[s]
	}
	if !found {
		return "", fault.Errorf(fault.Invalid, "contextFeatures: the experiment's privacy unit is the context feature %q, which this rank lacks", path)
	}
	unit, ok := unitValue(bytes.TrimSpace(val))
	if !ok {
		return "", fault.Errorf(fault.Invalid, "contextFeatures: the context feature %q, the experiment's privacy unit, must be a string or a number, got %.32s", path, val)
	}
	if err := CheckPathID("the context feature "+strconv.Quote(path)+" (the privacy unit)", unit); err != nil {
		return "", err
	}
	return unit, nil
}

// unitValue reads a unit's JSON value: a string, or a number (see above).
func unitValue(v []byte) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		return s, json.Unmarshal(v, &s) == nil
	case c == '-' || c >= '0' && c <= '9':
		if bytes.IndexAny(v, ".eE") < 0 && string(v) != "-0" {
			return string(v), json.Valid(v) // an integer, exact
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return "", false
		}
		b, err := json.Marshal(f)
		return string(b), err == nil
	}
	return "", false
}
