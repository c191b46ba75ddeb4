package service

import (
	"strings"
	"testing"
)

// TestPersonalizerEventIDDotSegment: an eventId "." or ".." is refused
// at the rank (400 naming eventId, nothing decided), single-slot and
// multi-slot alike: its reward and activation paths
// (/events/../reward) are rewritten by every client and server that
// removes dot segments (RFC 3986, section 5.2.4), so such an event
// could be ranked but never rewarded or activated (it was: 201, then
// 404 for each). Ids that merely hold dots ("..a") are taken.
func TestPersonalizerEventIDDotSegment(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(pzSpec("pz"))
		c := pzClient{t, h.http.URL, "pz", h.http.Client()}
		acts := []pzAction{{ID: "a", Features: []map[string]any{{"x": 1}}}, {ID: "b"}}
		for _, id := range []string{".", ".."} {
			code, b := c.post("/rank", pzRankRequest{EventID: id, Actions: acts, DeferActivation: true})
			wantError(t, "rank of eventId "+id, code, b, 400, "BadRequest")
			if !strings.Contains(string(b), "eventId") {
				t.Fatalf("the message does not name eventId: %s", b)
			}
			slate := map[string]any{"eventId": id, "actions": acts, "slots": []map[string]any{{"id": "s", "baselineAction": "a"}}}
			code, b = c.postAt("/personalizer/v1.1-preview.3", "/multislot/rank", slate)
			wantError(t, "multi-slot rank of eventId "+id, code, b, 400, "BadRequest")
		}
		if got := h.state("pz").Counts.Decisions; got != 0 {
			t.Fatalf("%d decisions after refused ranks", got)
		}
		res := c.rank(pzRankRequest{EventID: "..a", Actions: acts})
		c.reward(res.EventID, 1)
	})
}
