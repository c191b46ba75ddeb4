package service

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestPersonalizerRefusalsInItsShape: every refusal of a request under
// /personalizer/ is Personalizer's ErrorResponse, {"error": {"code",
// "message"}}, which its SDKs parse, also those answered before any
// Personalizer route runs: the guard's (a cross-origin browser request,
// a non-loopback host without a token file) and a route the surface does
// not have (404, or 405 with Allow).
func TestPersonalizerRefusalsInItsShape(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	rank := `{"actions":[{"id":"a","features":[{"x":1}]}]}`
	jsonType := map[string]string{"Content-Type": "application/json", "Ocp-Apim-Subscription-Key": "pz"}
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"a cross-origin rank", "POST", "/personalizer/v1.0/rank", map[string]string{"Content-Type": "application/json", "Ocp-Apim-Subscription-Key": "pz", "Origin": "http://attacker.example"}, 403},
		{"a rank through a rebound DNS name", "POST", "/personalizer/v1.0/rank", map[string]string{"Content-Type": "application/json", "Ocp-Apim-Subscription-Key": "pz", "Host": "attacker.example"}, 403},
		{"a rank by GET", "GET", "/personalizer/v1.0/rank", jsonType, 405},
		{"a route the surface does not have", "POST", "/personalizer/v1.0/evaluations", jsonType, 404},
	} {
		resp, b := request(t, h, c.method, c.path, c.header, rank)
		var e struct {
			Error struct{ Code, Message string }
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); resp.StatusCode != c.want || err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d as Personalizer's ErrorResponse (%v)", c.name, resp.StatusCode, b, c.want, err)
		}
	}
}
