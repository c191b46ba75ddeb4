package define

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestReadRankRefusesBadRequests: each bad request is Invalid and its
// message names the offending field.
func TestReadRankRefusesBadRequests(t *testing.T) {
	many := make([]any, MaxRankActions+1)
	for i := range many {
		many[i] = map[string]any{"id": fmt.Sprint(i), "features": []any{}}
	}
	act := func(id string) map[string]any { return map[string]any{"id": id, "features": []any{}} }
	deep := map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": 1}}}}} // 5 levels
	cases := []struct {
		name, field string
		body        string
	}{
		{"no actions", "actions", `{"actions":[]}`},
		{"51 actions", "actions", string(mustJSON(t, map[string]any{"actions": many}))},
		{"duplicate id", "actions[1].id", string(mustJSON(t, map[string]any{"actions": []any{act("a"), act("a")}}))},
		{"empty id", "actions[0].id", string(mustJSON(t, map[string]any{"actions": []any{act("")}}))},
		{"long id", "actions[0].id", string(mustJSON(t, map[string]any{"actions": []any{act(strings.Repeat("x", 257))}}))},
		{"long event id", "eventId", string(mustJSON(t, map[string]any{"eventId": strings.Repeat("e", 257), "actions": []any{act("a")}}))},
		{"infinite number", "contextFeatures[0].x", `{"contextFeatures":[{"x":1e999}],"actions":[{"id":"a","features":[]}]}`},
		{"infinite action number", "actions[0].features[0].n.y", `{"actions":[{"id":"a","features":[{"n":{"y":-1e400}}]}]}`},
		{"too deep", "contextFeatures[0]", string(mustJSON(t, map[string]any{"contextFeatures": []any{deep}, "actions": []any{act("a")}}))},
		{"feature not an object", "actions[0].features[0]", `{"actions":[{"id":"a","features":[3]}]}`},
		{"unknown excluded", "excludedActions[0]", `{"actions":[{"id":"a","features":[]}],"excludedActions":["b"]}`},
		{"all excluded", "excludedActions", `{"actions":[{"id":"a","features":[]}],"excludedActions":["a"]}`},
	}
	for _, c := range cases {
		_, err := ReadRank([]byte(c.body), 6)
		if fault.Of(err) != fault.Invalid || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: got %v (kind %v), want Invalid naming %s", c.name, err, fault.Of(err), c.field)
		}
	}
	// 256 characters, 50 actions and 4 levels are accepted.
	ok := []any{act(strings.Repeat("é", 256))}
	for i := 1; i < MaxRankActions; i++ {
		ok = append(ok, act(fmt.Sprint(i)))
	}
	if _, err := ReadRank(mustJSON(t, map[string]any{"actions": ok, "contextFeatures": []any{deep["a"]}}), 6); err != nil {
		t.Fatal(err)
	}
}

// TestReadRankVectors: every vector lies in the unit ball, the excluded
// actions are left out, and the context x action interactions make the
// difference between two actions depend on the context (without them
// x_a - x_b would be f_a - f_b whatever the context).
func TestReadRankVectors(t *testing.T) {
	rs, err := ReadRank(mustJSON(t, storetest.RankBody("e", []string{"sports"}, false)), 6)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rs.Eligible) != "[0 2]" || len(rs.Set) != 2 {
		t.Fatalf("eligible %v, %d vectors", rs.Eligible, len(rs.Set))
	}
	for i, v := range rs.Set {
		if n := linalg.Dot(v, v); !(n <= 1) || len(v) != 64 {
			t.Errorf("vector %d: squared norm %v, dimension %d", i, n, len(v))
		}
	}
	diff := func(weather string) []float64 {
		b := storetest.RankBody("e", nil, false)
		b["contextFeatures"] = []any{map[string]any{"weather": weather}}
		rs, err := ReadRank(mustJSON(t, b), 6)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float64, 64)
		for i := range d {
			d[i] = rs.Set[0][i] - rs.Set[2][i]
		}
		return d
	}
	if fmt.Sprint(diff("sunny")) == fmt.Sprint(diff("rainy")) {
		t.Fatal("the actions' difference does not depend on the context: no interactions")
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkReadRank: a rank request of ten actions of twenty features
// each and a context of two namespaces (loadgen's simulated site).
func BenchmarkReadRank(b *testing.B) {
	body := benchRankBody(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadRank(body, 5); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRankBody is dpbandit loadtest --personalizer's rank: ten articles
// of twenty features, a context of two namespaces.
func benchRankBody(b testing.TB) []byte {
	acts := make([]any, 10)
	for k := range acts {
		f := map[string]any{"title": fmt.Sprint("article ", k), "topic": fmt.Sprint("t", k%4)}
		for j := 2; j < 20; j++ {
			f[fmt.Sprint("f", j)] = float64((k*31+j*17)%1000) / 1000
		}
		acts[k] = map[string]any{"id": fmt.Sprint("a", k), "features": []any{map[string]any{"article": f}}}
	}
	body, err := json.Marshal(map[string]any{"eventId": "e1", "actions": acts,
		"contextFeatures": []any{map[string]any{"visitor": map[string]any{"segment": "s2", "device": "mobile"}}, map[string]any{"time": map[string]any{"hour": 12}}}})
	if err != nil {
		b.Fatal(err)
	}
	return body
}
