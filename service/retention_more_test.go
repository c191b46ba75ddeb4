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
		h, c, clock := startRetention(t, dsn, time.Date(2026, 11, 27, 14, 27, 4, 0, time.UTC))
		pzRound(c, "e", 30)
		h.srv.Expire()
		rewards := func() int {
			n := 0
			for _, has := range rewardsKept(t, h) {
				if has {
					n++
				}
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

// rewardsKept returns which stored events of experiment pz keep their
// reward, by event id.
func rewardsKept(t *testing.T, h *harness) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if err := h.store.Log(context.Background(), "default/pz", func(e store.Event) error {
		out[e.ID] = e.Reward != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPersonalizerLogRetentionLoggingOnly: an experiment in LoggingOnly
// mode with a log retention of 2 days (--keep-log) has the stored
// rewards of its events deleted once they are older than the retention,
// as an online experiment's covered rewards are: the learner takes none
// of them, so no release ever covers them and none is needed by a
// replay. Before the fix none was ever deleted (the sweep deleted only
// rewards before the learner's last release, and a logging-only
// experiment makes none). The events after the cutoff keep theirs, the
// ledger and the counts do not move, and a crash, a restart and a
// replay of the whole history (the snapshots corrupted) come to the
// same state over the deleted rewards.
func TestPersonalizerLogRetentionLoggingOnly(t *testing.T) {
	t.Parallel() // light: 50 events
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h, c, clock := startRetention(t, dsn, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		for _, u := range []string{apprenticeUpdate("LoggingOnly", 0.2), strings.Replace(apprenticeUpdate("LoggingOnly", 0.2), `"logRetentionDays":-1`, `"logRetentionDays":2`, 1)} {
			if code, _, b := c.call("PUT", pzV11, "/configurations/service", u); code != 200 {
				t.Fatalf("update: %d %s", code, b)
			}
		}
		pzRound(c, "old", 40)
		h.srv.Expire()
		clock.Add(47 * time.Hour)
		pzRound(c, "new", 10)
		st := h.state("pz")
		clock.Add(3 * time.Hour)
		h.srv.Expire()
		kept, deleted := 0, 0
		for id, has := range rewardsKept(t, h) {
			old := strings.HasPrefix(id, "old-")
			switch {
			case old && has:
				t.Errorf("event %s, past the retention, keeps its reward", id)
			case !old && !has:
				t.Errorf("event %s, within the retention, lost its reward", id)
			case old:
				deleted++
			default:
				kept++
			}
		}
		if deleted != 40 || kept != 10 {
			t.Fatalf("%d rewards deleted, %d kept: want 40 and 10", deleted, kept)
		}
		sameState(t, "the retention", st, h.state("pz"))
		restartSame(t, h, &c)
		// Replayed from the whole history (no snapshot verifies): the
		// same state over the deleted rewards.
		h.close()
		db := storetest.DB(t, dsn)
		if _, err := db.Exec(`UPDATE snapshots SET state = sum`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		h.open()
		sameState(t, "a replay of the whole history", st, h.state("pz"))
	})
}
