package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/importer"
)

// Imports into a Personalizer experiment (importer/rank.go;
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
	// The request is written by hand: the members are raw JSON already
	// (json.Marshal would check and compact each again).
	b := append(make([]byte, 0, len(text)), `{"contextFeatures":[`...)
	b = appendFeatures(b, rec.C)
	b = append(b, `],"actions":[`...)
	for i, o := range multi {
		if i > 0 {
			b = append(b, ',')
		}
		id, _ := json.Marshal(pzActionID(o, i))
		b = append(append(append(b, `{"id":`...), id...), `,"features":[`...)
		b = append(appendFeatures(b, o), "]}"...)
	}
	return append(b, "]}"...), ""
}

// appendFeatures appends to b the object of o's members whose keys do
// not begin with "_" (its features), in the keys' order.
func appendFeatures(b []byte, o map[string]json.RawMessage) []byte {
	b = append(b, '{')
	first := true
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if strings.HasPrefix(k, "_") {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		key, _ := json.Marshal(k)
		b = append(append(append(b, key...), ':'), o[k]...)
	}
	return append(b, '}')
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
// (pzRankOf), hashed as a live rank of the experiment of definition def
// is (importer.RankLogged), or returns why the record is refused.
func pzLogged(def *define.Definition, l *importer.Event, text []byte) string {
	raw, reason := pzRankOf(text)
	if reason != "" {
		return reason
	}
	if err := importer.RankLogged(def, l, raw); err != nil {
		return "the rank request rebuilt from c (contextFeatures) and c._multi (actions): " + err.Error()
	}
	return ""
}
