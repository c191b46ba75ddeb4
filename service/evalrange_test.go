package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestPersonalizerEvaluationFarRange: an evaluation's range may reach
// past what int64 nanoseconds since 1970 hold (1677 to 2262): a range
// from 1500 or to 2300, 2700 or 9999 still holds every event decided
// today, in the evaluation and in the exported log. Before the fix the
// bounds' UnixNano overflowed: [2000, 2300) and [1500, 2030) were 400
// NoLogsExistInDateRange, and 9999-12-31 too, as if the log were empty.
// A range from 0001-01-01 (.NET's DateTime.MinValue, Go's zero time) was
// refused as if startTime were missing.
func TestPersonalizerEvaluationFarRange(t *testing.T) {
	t.Parallel() // light: 20 events, 4 evaluations
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		c := createPZ(t, h)
		pzRound(c, "e", 20)
		for _, r := range [][2]string{{"2000-01-01T00:00:00Z", "2300-01-01T00:00:00Z"}, {"1500-01-01T00:00:00Z", "2030-01-01T00:00:00Z"},
			{"2000-01-01T00:00:00Z", "2700-01-01T00:00:00Z"}, {"1000-01-01T00:00:00Z", "9999-12-31T23:59:59Z"},
			{"0001-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}} { // .NET's DateTime.MinValue, Go's zero time
			code, _, b := c.call("POST", pzV11, "/evaluations", fmt.Sprintf(`{"name": "all", "startTime": %q, "endTime": %q, "policies": []}`, r[0], r[1]))
			var ev struct {
				Dpbandit struct{ Events int } `json:"dpbandit"`
			}
			if code != 201 || json.Unmarshal(b, &ev) != nil || ev.Dpbandit.Events != 20 {
				t.Fatalf("an evaluation of [%s, %s): %d %s, want 201 over the 20 events", r[0], r[1], code, b)
			}
			code, lb := h.do("GET", "/v1/experiments/pz/log?format=evaluation&start="+r[0]+"&end="+r[1], "", nil)
			if n := strings.Count(string(lb), "\n"); code != 200 || n != 20 {
				t.Fatalf("the log of [%s, %s): %d, %d lines, want 20", r[0], r[1], code, n)
			}
		}
	})
}
