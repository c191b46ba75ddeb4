package importer

import (
	"encoding/json"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
)

// Imports into a Personalizer experiment (docs/personalizer.md, Bringing
// your Personalizer logs).
//
// A Personalizer experiment's decisions are rank requests, whose JSON
// features the experiment hashes itself (define.ReadRank). A dsjson log
// of Personalizer or Vowpal Wabbit keeps those features raw, so the
// caller rebuilds each record's rank request (package api: the context
// features from c, the actions from c._multi) and RankLogged reads it as
// a live rank is read (define.Definition.ReadRankContext: the same
// hashing, the same checks, the same stored context). The import then
// replays the log as a contextual experiment's (replay): each record is
// ranked by the experiment's policy, and rewarded, through the engine's
// settle, when the policy chose the logged action.

// RankLogged reads the rank request raw, rebuilt from a logged event,
// into l's context and decision set, as a live rank of raw would be read
// by the experiment of definition def (the caller's copy, read once for
// the whole log: its rank cache is the experiment's); l.Arm is the logged action's index among raw's actions. Errors
// are fault.Invalid or fault.TooLarge and name the request's field; a
// request with excluded actions or a slate's slot is refused (a logged
// decision ranked every action it lists). With a unit_feature, l's unit
// is that context feature's value (loggedUnit; a record without it is
// refused).
func RankLogged(def *define.Definition, l *Event, raw []byte) error {
	if def.Surface != define.SurfacePersonalizer {
		return fault.Errorf(fault.Invalid, "experiment %q is not a personalizer experiment: it imports decision sets, not rank requests", def.ID)
	}
	ctxt, rs, err := def.ReadRankContext(raw)
	if err == nil {
		err = rs.Request.CheckNoSlot()
	}
	if err == nil {
		err = loggedUnit(def, l, rs.Request.ContextFeatures)
	}
	if err != nil {
		return err
	}
	if len(rs.Eligible) != len(rs.Request.Actions) {
		return fault.Errorf(fault.Invalid, "excludedActions: a logged rank request excludes no action")
	}
	if l.Arm < 0 || l.Arm >= len(rs.Set) {
		return fault.Errorf(fault.Invalid, "the logged action %d (0-based) is outside the request's %d actions", l.Arm, len(rs.Set))
	}
	l.Context, l.Set, l.Shared, l.ranked = ctxt, rs.Set, rs.Shared, true
	return nil
}

// loggedUnit sets the unit of a logged rank l from its contextFeatures
// (features) when the experiment of def has a unit_feature, as a live
// rank's unit is found (define.Definition.RankUnit); a record that names
// another unit, or lacks the feature, is refused (fault.Invalid).
func loggedUnit(def *define.Definition, l *Event, features []json.RawMessage) error {
	if def.UnitFeature == "" {
		return nil
	}
	unit, err := def.RankUnit(features, l.ID)
	if err != nil {
		return err
	}
	if l.Unit != "" && l.Unit != unit {
		return fault.Errorf(fault.Invalid, "the record's unit %q differs from its context feature %q, %q (the experiment's privacy unit)", l.Unit, def.UnitFeature, unit)
	}
	l.Unit = unit
	return nil
}
