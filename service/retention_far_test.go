package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestPersonalizerLogRetentionFarFuture: a retention longer than
// time.Duration holds (106,751 days), up to the specification's int32
// maximum, keeps everything: no stored reward is deleted and the
// exported log shows every event. Before the fix the cutoff, now less
// days × 24 h, overflowed: at 150,000 days it fell in 2200 and at
// 213,503 days tomorrow, so the tick deleted every covered reward and
// the log showed nothing.
func TestPersonalizerLogRetentionFarFuture(t *testing.T) {
	t.Parallel() // light: 30 events
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		clock := storetest.NewClock(time.Date(2026, 11, 27, 14, 27, 4, 0, time.UTC))
		h := start(t, dsn, Config{KeepLog: true, Now: clock.Now})
		h.create(pzSpec("pz"))
		c := pzClient{t, h.http.URL, "pz", h.http.Client()}
		pzRound(c, "e", 30)
		h.srv.Expire()
		rewards := func() int {
			n := 0
			if err := h.store.Log(context.Background(), "default/pz", func(e store.Event) error {
				if e.Reward != nil {
					n++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := rewards(); n != 30 {
			t.Fatalf("%d stored rewards before the retention, want 30", n)
		}
		for _, days := range []int{106751, 106752, 150000, 213503, 1000000, 2147483647} {
			if code, _, b := c.call("PUT", pzV11, "/configurations/service", retentionUpdate(days)); code != 200 {
				t.Fatalf("retention of %d days: %d %s", days, code, b)
			}
			clock.Add(time.Hour)
			h.srv.Expire()
			if n := rewards(); n != 30 {
				t.Fatalf("a retention of %d days deleted %d of the 30 stored rewards", days, 30-n)
			}
			_, lb := h.do("GET", "/v1/experiments/pz/log", "", nil)
			if n := strings.Count(string(lb), "\n"); n != 30 {
				t.Fatalf("a retention of %d days: the exported log holds %d lines, want 30", days, n)
			}
			var props struct {
				DateRange struct{ From time.Time } `json:"dateRange"`
			}
			c.get(pzV11, "/logs/properties", &props)
			if props.DateRange.From.After(clock.Now()) {
				t.Fatalf("a retention of %d days: logs from %v, after now", days, props.DateRange.From)
			}
		}
	})
}
