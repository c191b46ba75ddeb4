package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// retentionUpdate is a configurations/service update to a log retention
// of days days, the other settings the defaults (a 10-minute wait).
func retentionUpdate(days int) string {
	return fmt.Sprintf(`{"rewardWaitTime":"PT10M","defaultReward":0,"rewardAggregation":"earliest","explorationPercentage":0.2,
	  "modelExportFrequency":"PT5M","logRetentionDays":%d}`, days)
}

// startRetention starts a harness on dsn that keeps its log (the
// retention applies to it), with a clock set at at, and creates the
// Personalizer experiment "pz".
func startRetention(t *testing.T, dsn string, at time.Time) (*harness, pzClient, *storetest.Clock) {
	clock := storetest.NewClock(at)
	h := start(t, dsn, Config{KeepLog: true, Now: clock.Now})
	return h, createPZ(t, h), clock
}

// TestPersonalizerLogRetention: with --keep-log, logRetentionDays is
// enforced on the experiment's clock. A retention under the reward wait
// plus a day (rounded up: 2 days for 10 minutes) is refused, naming the
// field. At a retention of 2 days, 40 events ranked and rewarded at day
// 0, then events after the learner's last release (which no release
// covers): at day 2 less an hour the tick deletes nothing; at day 2
// plus 2 hours it deletes from the store the rewards of the covered
// events and no other; the exported log shows no event of day 0 (only
// those ranked since), logs/properties starts at the cutoff; the
// decisions stay (a retried day-0 rank is answered as before), the
// ledger and the counts do not move, and a crash and a restart replay
// over the deleted rewards to the same state.
func TestPersonalizerLogRetention(t *testing.T) {
	t.Parallel() // light: a hundred requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h, c, clock := startRetention(t, dsn, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		code, _, b := c.call("PUT", pzV11, "/configurations/service", retentionUpdate(1))
		wantError(t, "retention of 1 day", code, b, 400, "BadRequest")
		if !strings.Contains(string(b), "logRetentionDays") {
			t.Fatalf("the message does not name logRetentionDays: %s", b)
		}
		if code, _, b := c.call("PUT", pzV11, "/configurations/service", retentionUpdate(2)); code != 200 || !strings.Contains(string(b), `"logRetentionDays":2`) {
			t.Fatalf("update: %d %s", code, b)
		}
		start := clock.Now()
		old := pzRound(c, "old", 40)
		// Events after the last release: ranked until two in a row
		// come without a release (episodes grow: this ends).
		for i, after, rel := 0, 0, h.state("pz").Releases; after < 2; i++ {
			if i == 50 {
				t.Fatal("a release after each of 50 events")
			}
			pzRound(c, fmt.Sprint("tail", i), 1)
			if now := h.state("pz").Releases; now != rel {
				after, rel = 0, now
			} else {
				after++
			}
		}
		h.srv.Expire()
		stored := func() map[string]store.Event {
			out := map[string]store.Event{}
			if err := h.store.Log(context.Background(), "default/pz", func(e store.Event) error { out[e.ID] = e; return nil }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := stored()
		for id, e := range before {
			if e.Reward == nil {
				t.Fatalf("event %s has no reward before the retention: %+v", id, e)
			}
		}
		st := h.state("pz")
		ledger := h.call("GET", "/v1/units/old-3/ledger", nil, 200, nil)
		clock.Add(24 * time.Hour)
		h.srv.Expire()
		clock.Add(23 * time.Hour)
		h.srv.Expire()
		for id, e := range stored() {
			if e.Reward == nil {
				t.Fatalf("event %s lost its reward within the retention", id)
			}
		}
		clock.Add(3 * time.Hour)
		h.srv.Expire()
		last := st.Recent[len(st.Recent)-1].Seq // the last release (none since: no request)
		deleted, uncovered := 0, 0
		for id, e := range stored() {
			want := before[id].Reward
			if e.Seq < last {
				want = nil
			} else {
				uncovered++
			}
			if (e.Reward == nil) != (want == nil) {
				t.Fatalf("event %s (operation %d, last release %d): reward %v, want %v", id, e.Seq, last, e.Reward, want)
			}
			if e.Reward == nil {
				deleted++
			}
		}
		if deleted == 0 || uncovered == 0 {
			t.Fatalf("%d rewards deleted, %d kept uncovered: the test checks nothing (last release at operation %d)", deleted, uncovered, last)
		}
		sameState(t, "the retention", st, h.state("pz"))
		pzRound(c, "new", 3)
		_, lb := h.do("GET", "/v1/experiments/pz/log", "", nil)
		if n := strings.Count(string(lb), "\n"); n != 3 || strings.Count(string(lb), `"event_id":"new-`) != 3 {
			t.Fatalf("the exported log holds %d lines, want the 3 ranked since the cutoff: %s", n, lb)
		}
		var props struct {
			DateRange struct{ From time.Time } `json:"dateRange"`
		}
		c.get(pzV11, "/logs/properties", &props)
		if want := start.Add(2 * time.Hour); !props.DateRange.From.Equal(want) {
			t.Fatalf("logs from %v, want the cutoff %v", props.DateRange.From, want)
		}
		if r := pzRound(c, "old", 1)[0]; fmt.Sprint(r) != fmt.Sprint(old[0]) {
			t.Fatalf("a retried rank: %+v, first %+v", r, old[0])
		}
		if again := h.call("GET", "/v1/units/old-3/ledger", nil, 200, nil); string(again) != string(ledger) {
			t.Fatalf("the ledger changed: %s, was %s", again, ledger)
		}
		restartSame(t, h, &c)
	})
}
