package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/personalizer"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestPersonalizerKeyCase pins the Personalizer surface's reading of
// request bodies (rank, reward, multi-slot rank and reward) as ASP.NET
// Core's web defaults read them (System.Text.Json's
// PropertyNameCaseInsensitive; Newtonsoft.Json's default alike): a
// field name in another case binds, and of a name
// given twice the last counts; an unknown name is 400. The native /v1
// bodies are strict: another case is an unknown field (400). The
// OpenAPI document lists the exact names, what the stock SDKs send
// (JSON Schema cannot say "in any case"), so the bodies in another case
// go to the service's handler directly, not through the contract check
// that wraps the harness.
func TestPersonalizerKeyCase(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{KeepLog: true})
	h.create(pzSpec("pz"))
	direct := func(path, body string) (int, string) {
		base := pzV10
		if strings.HasPrefix(path, "/multislot") {
			base = pzV11
		}
		req := httptest.NewRequest("POST", "http://127.0.0.1"+base+path, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1" // loopback, no token file: the key is the experiment's id
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(personalizer.SubscriptionKeyHeader, "pz")
		w := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for _, r := range []struct {
		event, body string
		want        float64
	}{
		{"upper", `{"Value": 0.75}`, 0.75},
		{"twice", `{"value": 0.25, "VALUE": 0.5}`, 0.5},
	} {
		if code, b := direct("/rank", `{"Actions": [{"id": "a", "features": []}, {"ID": "b", "Features": []}], "EventId": "`+r.event+`"}`); code != http.StatusCreated || !strings.Contains(b, `"eventId":"`+r.event+`"`) {
			t.Fatalf("rank in other cases: %d %s", code, b)
		}
		if code, b := direct("/events/"+r.event+"/reward", r.body); code != http.StatusNoContent {
			t.Fatalf("%s: %d %s", r.body, code, b)
		}
		var got *float64
		err := h.store.Log(context.Background(), "default/pz", func(e store.Event) error {
			if e.ID == r.event {
				got = e.Reward
			}
			return nil
		})
		if err != nil || got == nil || *got != r.want {
			t.Fatalf("%s: stored reward %v (%v), want %v", r.body, got, err, r.want)
		}
	}
	// A multi-slot reward alike.
	if code, b := direct("/multislot/rank", `{"actions": [{"id": "a"}, {"id": "b"}], "slots": [{"id": "top", "baselineAction": "a"}], "eventId": "page"}`); code != http.StatusCreated {
		t.Fatalf("multislot rank: %d %s", code, b)
	}
	if code, b := direct("/multislot/events/page/reward", `{"Reward": [{"SlotId": "top", "value": 0.25, "VALUE": 0.5}]}`); code != http.StatusNoContent {
		t.Fatalf("multislot reward in other cases: %d %s", code, b)
	}
	var got *float64
	if err := h.store.Log(context.Background(), "default/pz", func(e store.Event) error {
		if e.ID == "page\x1f0" {
			got = e.Reward
		}
		return nil
	}); err != nil || got == nil || *got != 0.5 {
		t.Fatalf("the slot's stored reward %v (%v), want 0.5", got, err)
	}
	code, b := direct("/events/upper/reward", `{"reward": 1}`)
	wantError(t, "an unknown field", code, []byte(b), 400, "BadRequest")
	h.call("POST", "/v1/experiments/pz/rewards", map[string]any{"event_id": "upper", "Reward": 1}, 400, nil)
}
