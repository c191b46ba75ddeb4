package service

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/internal/contract"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestBatchLineStatusIsTheSingleOnes: a reward whose request ends before
// it is durable answers the same status alone and as a batch line (503:
// retry; it was 500 in a batch).
func TestBatchLineStatusIsTheSingleOnes(t *testing.T) {
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	h.decide("e", "1", "u1")
	h.decide("e", "2", "u2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	send := func(ctype, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/experiments/e/rewards", strings.NewReader(body))
		req.Host = "127.0.0.1" // loopback: no token file needed
		req.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		contract.Handler(t, h.srv.Handler()).ServeHTTP(w, req)
		return w
	}
	single := send("application/json", `{"event_id":"1","reward":1}`).Code
	w := send("application/x-ndjson", `{"event_id":"2","reward":1}`+"\n")
	var line struct{ Code int }
	if err := json.Unmarshal(w.Body.Bytes(), &line); err != nil {
		t.Fatalf("batch answer %d %q: %v", w.Code, w.Body, err)
	}
	if single != 503 || line.Code != single {
		t.Fatalf("a reward whose request ended: %d alone, %d as a batch line; want 503 both", single, line.Code)
	}
}
