package api

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
)

// Imports into a Personalizer experiment (engine/pzimport.go;
// docs/personalizer.md, Bringing your Personalizer logs): each dsjson
// record's rank request is rebuilt from its raw features, and hashed by
// the experiment as a live rank's.

// pzRecord is what a dsjson record holds of its rank request: its
// context c (its shared features beside _multi, the actions' feature
// objects) and _outcomes, present in a record of several slots.
type pzRecord struct {
	C        map[string]json.RawMessage `json:"c"`
	Outcomes json.RawMessage            `json:"_outcomes"`
}

// pzRankOf rebuilds the rank request of a dsjson record (its text, which
// the ope reader has read whole): contextFeatures is one object, c's
// members but those whose key begins with "_" (_multi, _slots and
// Personalizer's private fields: the hashing ignores them anyway); each
// object of c._multi is an action, in order, its features the object's
// members but those beginning with "_", its id the object's "_tag" (a
// string, as Personalizer writes the action's id), else the "id" of its
// namespace "i" (Personalizer's {"constant": 1, "id": ...}), else its
// 1-based index in c._multi as a decimal ("1", "2", ...: the ids of the
// record's a and _label_Action). A record of several slots (_outcomes)
// or without c._multi is refused: the reason names the field.
func pzRankOf(text []byte) ([]byte, string) {
	var rec pzRecord
	if err := json.Unmarshal(text, &rec); err != nil {
		return nil, "c: " + err.Error()
	}
	if rec.Outcomes != nil {
		return nil, "_outcomes: a record of several slots (a multi-slot rank) is not imported into a personalizer experiment: its slots' rewards are not a single rank's"
	}
	var multi []map[string]json.RawMessage
	if m, ok := rec.C["_multi"]; !ok || json.Unmarshal(m, &multi) != nil || len(multi) == 0 {
		return nil, "c._multi: missing or not a non-empty array of objects: a personalizer experiment imports each record's actions, one object of features each"
	}
	req := struct {
		ContextFeatures []json.RawMessage       `json:"contextFeatures"`
		Actions         []define.RankableAction `json:"actions"`
	}{[]json.RawMessage{features(rec.C)}, make([]define.RankableAction, len(multi))}
	for i, o := range multi {
		req.Actions[i] = define.RankableAction{ID: pzActionID(o, i), Features: []json.RawMessage{features(o)}}
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, "c: " + err.Error()
	}
	return raw, ""
}

// features is the object of o's members whose keys do not begin with
// "_" (its features).
func features(o map[string]json.RawMessage) json.RawMessage {
	f := make(map[string]json.RawMessage, len(o))
	for k, v := range o {
		if !strings.HasPrefix(k, "_") {
			f[k] = v
		}
	}
	b, _ := json.Marshal(f) // (raw members of a decoded object: valid)
	return b
}

// pzActionID is the id of the action o, the i-th (0-based) of c._multi
// (pzRankOf).
func pzActionID(o map[string]json.RawMessage, i int) string {
	var tag string
	if json.Unmarshal(o["_tag"], &tag) == nil && tag != "" {
		return tag
	}
	var ns struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(o["i"], &ns) == nil && ns.ID != "" {
		return ns.ID
	}
	return strconv.Itoa(i + 1)
}

// pzLogged reads into l the rank request of its dsjson record text
// (pzRankOf), hashed by x as a live rank's (engine.Experiment.RankLogged),
// or returns why the record is refused.
func pzLogged(x *engine.Experiment, l *engine.Logged, text []byte) string {
	raw, reason := pzRankOf(text)
	if reason != "" {
		return reason
	}
	if err := x.RankLogged(l, raw); err != nil {
		return "the rank request rebuilt from c (contextFeatures) and c._multi (actions): " + err.Error()
	}
	return ""
}
