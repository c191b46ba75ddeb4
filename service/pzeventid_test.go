package service

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestPersonalizerEventIDOf256Characters: an eventId of 256 characters,
// the specification's maxLength, is taken whatever their UTF-8 length
// (256 four-byte characters: 1,024 bytes; the service's ids were 128
// bytes at most, so such a rank was a 400); its reward and activation
// reach it, a slate of that id too; 257 characters are a 400.
func TestPersonalizerEventIDOf256Characters(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		c := createPZ(t, h)
		acts := []pzAction{{ID: "a", Features: []map[string]any{{"x": 1}}}, {ID: "b", Features: []map[string]any{{"y": 1}}}}
		for i, char := range []string{"e", "é", "€", "😀"} {
			id := strings.Repeat(char, 255) + fmt.Sprint(i)
			res := c.rank(pzRankRequest{EventID: id, Actions: acts, DeferActivation: true})
			if res.EventID != id {
				t.Fatalf("rank of an eventId of 256 characters (%d bytes) answered eventId %q", len(id), res.EventID)
			}
			if code, b := c.post("/events/"+url.PathEscape(id)+"/activate", nil); code != 204 {
				t.Fatalf("activate of a %d-byte eventId: %d %s", len(id), code, b)
			}
			c.reward(url.PathEscape(id), 1)
		}
		slate := map[string]any{"eventId": strings.Repeat("😀", 256), "actions": acts, "slots": []map[string]any{{"id": "s", "baselineAction": "a"}}}
		if code, b := c.postAt("/personalizer/v1.1-preview.3", "/multislot/rank", slate); code != 201 {
			t.Fatalf("multi-slot rank of a 1,024-byte eventId: %d %s", code, b)
		}
		code, b := c.post("/rank", pzRankRequest{EventID: strings.Repeat("😀", 257), Actions: acts})
		wantError(t, "eventId of 257 characters", code, b, 400, "BadRequest")
		if got := h.state("pz").Counts.Rewards; got != 4 {
			t.Fatalf("%d rewards counted, want the 4 given", got)
		}
	})
}

// TestPersonalizerEventIDDotSegment: an eventId "." or ".." is refused
// at the rank (400 naming eventId, nothing decided), single-slot and
// multi-slot alike: its reward and activation paths
// (/events/../reward) are rewritten by every client and server that
// removes dot segments (RFC 3986, section 5.2.4), so such an event
// could be ranked but never rewarded or activated (it was: 201, then
// 404 for each). Ids that merely hold dots ("..a") are taken.
func TestPersonalizerEventIDDotSegment(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		c := createPZ(t, h)
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
