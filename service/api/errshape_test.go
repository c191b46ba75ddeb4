package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestRetryKeepsTheSurfacesShape: the 503 of a replica that did not
// answer a forwarded request is Personalizer's ErrorResponse under
// /personalizer/ and the native error elsewhere, with Retry-After both
// ways.
func TestRetryKeepsTheSurfacesShape(t *testing.T) {
	for path, want := range map[string]string{
		"/personalizer/v1.0/rank":   `{"error":{"code":"ServiceUnavailable","message":"replica z did not answer: retry"}}`,
		"/v1/experiments/e/rewards": `{"error":"replica z did not answer: retry"}`,
	} {
		w := httptest.NewRecorder()
		writeRetry(w, httptest.NewRequest("POST", path, nil), "replica z did not answer")
		var got, exp any
		json.Unmarshal(w.Body.Bytes(), &got)
		json.Unmarshal([]byte(want), &exp)
		g, _ := json.Marshal(got)
		e, _ := json.Marshal(exp)
		if w.Code != 503 || w.Header().Get("Retry-After") == "" || !bytes.Equal(g, e) {
			t.Errorf("%s: %d (Retry-After %q) %s, want 503 with Retry-After and %s", path, w.Code, w.Header().Get("Retry-After"), w.Body.Bytes(), want)
		}
	}
}
