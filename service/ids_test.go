package service

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// TestIDFilter: every id added is reported (no false negative), ids
// never added are reported at a rate below 2p = 0.2% (over 10^5 probes
// after 10^6 ids: the rate's standard error is about 1.4 10^-4 at 0.2%,
// so the bound has 4 standard errors of room below the limit 0.26%), and
// the memory stays near 1.9 bytes an id.
func TestIDFilter(t *testing.T) {
	f := newIDFilter()
	const n = 1000000
	for i := range n {
		f.add(fmt.Sprint("event-", i))
	}
	for i := 0; i < n; i += 997 {
		if !f.mayContain(fmt.Sprint("event-", i)) {
			t.Fatalf("event-%d added and not found", i)
		}
	}
	fp := 0
	const probes = 100000
	for i := range probes {
		if f.mayContain(fmt.Sprint("other-", i)) {
			fp++
		}
	}
	rate := float64(fp) / probes
	if limit := 2*filterP + 4*math.Sqrt(2*filterP/probes); rate > limit {
		t.Errorf("false positive rate %v above %v", rate, limit)
	}
	bytes := 0
	for _, s := range f.stages {
		bytes += 8 * len(s.bits)
	}
	t.Logf("false positive rate %.4f%%; %.2f bytes per id in %d stages", 100*rate, float64(bytes)/n, len(f.stages))
	if float64(bytes)/n > 4 {
		t.Errorf("%v bytes per id", float64(bytes)/n)
	}
}

// TestOldEventsAnsweredFromTheStore: past Config.KeepEvents settled events an
// experiment forgets the oldest from memory; a retry of one is answered
// from the store with the same decision and reward result, an id reused
// for another unit is still a conflict, and a new id decides as usual.
// Both stores.
func TestOldEventsAnsweredFromTheStore(t *testing.T) {
	forStores(t, func(t *testing.T, dsn string) {
		const keep = 64
		h := start(t, dsn, Config{KeepEvents: keep})
		h.create(bernoulliSpec("e", 3, 0.5))
		l, _ := h.srv.get("default", "e")
		first := map[string]Decision{}
		var last chan struct{}
		const n = keep + 500
		for i := range n {
			ev := fmt.Sprint(i)
			d, _, err := h.srv.startDecide(l, ev, ev, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if i < 10 {
				first[ev] = d
			}
			if _, last, err = h.srv.startReward(l, ev, float64(i%2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.srv.w.wait(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		h.decide("e", "fresh", "fresh") // a decision after the last commit: the oldest settled leave memory
		l.mu.Lock()
		kept := len(l.events)
		_, old := l.events["0"]
		l.mu.Unlock()
		if kept > keep+2 || old {
			t.Fatalf("%d events in memory (event 0 among them: %v), want at most %d", kept, old, keep+2)
		}
		for ev, d := range first {
			if again := h.decide("e", ev, ev); again != d {
				t.Errorf("retry of decision %s: %+v, first %+v", ev, again, d)
			}
			var res RewardResult
			h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": ev, "reward": 0}, 200, &res)
			if res.EventID != ev || res.Status == Pending {
				t.Errorf("retry of reward %s: %+v", ev, res)
			}
		}
		h.call("POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "3", "unit_id": "other"}, 409, nil)
		if st := h.state("e"); st.Decisions != n+1 {
			t.Errorf("%d decisions, want %d", st.Decisions, n+1)
		}
	})
}
