package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPzRankOf: a dsjson record's rank request takes the context
// features from c (its "_" members left out), one action per object of
// c._multi, in order, its id the object's _tag, else its namespace i's
// id, else its 1-based index; a record of several slots or without
// c._multi is refused, naming the field.
func TestPzRankOf(t *testing.T) {
	rec := `{"_label_cost":-1,"_label_probability":0.5,"_labelIndex":0,"EventId":"e","c":{"User":[{"tier":"pro"}],"_synthetic":false,` +
		`"_multi":[{"_tag":"news","i":{"constant":1,"id":"news"},"Topic":[{"kind":"news"}]},{"i":{"constant":1,"id":"sports"}},{"Topic":{"kind":"music"}}]}}`
	raw, reason := pzRankOf([]byte(rec))
	if reason != "" {
		t.Fatal(reason)
	}
	var req struct {
		ContextFeatures []map[string]any `json:"contextFeatures"`
		Actions         []struct {
			ID       string           `json:"id"`
			Features []map[string]any `json:"features"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range req.Actions {
		ids = append(ids, a.ID)
	}
	if strings.Join(ids, ",") != "news,sports,3" {
		t.Fatalf("ids %v, want news (its _tag), sports (i.id), 3 (its index)", ids)
	}
	if len(req.ContextFeatures) != 1 || len(req.ContextFeatures[0]) != 1 || req.ContextFeatures[0]["User"] == nil {
		t.Fatalf("context features %v, want c's User alone", req.ContextFeatures)
	}
	if f := req.Actions[0].Features; len(f) != 1 || len(f[0]) != 2 || f[0]["_tag"] != nil || f[0]["Topic"] == nil || f[0]["i"] == nil {
		t.Fatalf("the first action's features %v, want its object without _tag", f)
	}
	for _, c := range []struct{ rec, field string }{
		{strings.Replace(rec, `"_multi"`, `"_many"`, 1), "c._multi"},
		{strings.Replace(rec, `"_multi":[`, `"_multi":[1,`, 1), "c._multi"},
		{strings.Replace(rec, `"EventId":"e"`, `"_outcomes":[{"_label_cost":-1,"_a":[0],"_p":[1]}]`, 1), "_outcomes"},
	} {
		if _, reason := pzRankOf([]byte(c.rec)); !strings.HasPrefix(reason, c.field+":") {
			t.Errorf("%s: %q, want a reason naming %s", c.rec, reason, c.field)
		}
	}
}
