package service

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestIDFilter: every id added is reported (no false negative), in its
// namespace only, and ids never added are reported at the rate
// (1 - e^(-k n / m))^k of a Bloom filter of m bits with k probes and n
// ids: 0.66% for m = 2^20, k = 8, n = 10^5, within 4 standard errors
// over 10^5 probes (a standard error of 0.026%). The filter's memory
// does not change as ids are added.
func TestIDFilter(t *testing.T) {
	t.Parallel()
	const m, n, probes = 1 << 20, 100000, 100000
	f := newIDFilter(m)
	words := len(f.bits)
	for i := range n {
		f.add("a\x00", fmt.Sprint("event-", i))
	}
	fp, other := 0, 0
	for i := range n {
		if !f.mayContain("a\x00", fmt.Sprint("event-", i)) {
			t.Fatalf("event-%d added and not found", i)
		}
		if f.mayContain("b\x00", fmt.Sprint("event-", i)) {
			other++
		}
	}
	for i := range probes {
		if f.mayContain("a\x00", fmt.Sprint("other-", i)) {
			fp++
		}
	}
	want := math.Pow(1-math.Exp(-filterProbes*n/float64(m)), filterProbes)
	se := math.Sqrt(want * (1 - want) / probes)
	for _, c := range []struct {
		what string
		got  int
	}{{"ids never added", fp}, {"ids added in another namespace", other}} {
		if rate := float64(c.got) / probes; math.Abs(rate-want) > 4*se {
			t.Errorf("%s: false positive rate %.4f%%, want %.4f%% ± %.4f%%", c.what, 100*rate, 100*want, 400*se)
		}
	}
	t.Logf("false positive rates %.4f%% and %.4f%%, predicted %.4f%%", 100*float64(fp)/probes, 100*float64(other)/probes, 100*want)
	if len(f.bits) != words || words != m/64 {
		t.Errorf("%d words, want %d", len(f.bits), m/64)
	}
}

// TestOldEventsAnsweredFromTheStore: past Config.KeepEvents settled events an
// experiment forgets the oldest from memory; a retry of one is answered
// from the store with the same decision and reward result, an id reused
// for another unit is still a conflict, and a new id decides as usual.
// Both stores.
func TestOldEventsAnsweredFromTheStore(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		const keep = 64
		h := start(t, dsn, Config{KeepEvents: keep})
		h.create(bernoulliSpec("e", 3, 0.5))
		x, _ := h.srv.get("default", "e")
		first := map[string]engine.Decision{}
		var last chan struct{}
		const n = keep + 500
		for i := range n {
			ev := fmt.Sprint(i)
			d, _, err := x.StartDecide(ev, ev, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if i < 10 {
				first[ev] = d
			}
			if _, last, err = x.StartReward(ev, float64(i%2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.srv.w.Wait(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		h.decide("e", "fresh", "fresh") // a decision after the last commit: the oldest settled leave memory
		x.mu.Lock()
		kept := len(x.events)
		_, old := x.events["0"]
		x.mu.Unlock()
		if kept > keep+2 || old {
			t.Fatalf("%d events in memory (event 0 among them: %v), want at most %d", kept, old, keep+2)
		}
		for ev, d := range first {
			if again := h.decide("e", ev, ev); again != d {
				t.Errorf("retry of decision %s: %+v, first %+v", ev, again, d)
			}
			var res engine.RewardResult
			h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": ev, "reward": 0}, 200, &res)
			if res.EventID != ev || res.Status == store.Pending {
				t.Errorf("retry of reward %s: %+v", ev, res)
			}
		}
		h.call("POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "3", "unit_id": "other"}, 409, nil)
		if st := h.state("e"); st.Decisions != n+1 {
			t.Errorf("%d decisions, want %d", st.Decisions, n+1)
		}
	})
}

// clientPath is the path a client sends for p once it has removed the
// dot segments ("." and ".." between slashes), as curl, Python's
// urllib3 and browsers do (RFC 3986, section 5.2.4); Go's ResolveReference
// does the same.
func clientPath(p string) string {
	base := &url.URL{Scheme: "http", Host: "h"}
	u, err := base.Parse(p)
	if err != nil {
		return ""
	}
	return u.EscapedPath()
}

// TestIDsInPathsAreAddressable: an experiment id or unit id that a
// client's URL normalisation would change ("." and "..", dot segments
// once escaped) is refused where it is first written, a 400 naming the
// field, so that every id the service holds can be addressed; every
// other id, escaped as one path segment (url.PathEscape, Python's
// quote(id, safe="")), reaches its experiment or ledger unchanged:
// slashes, percent signs, spaces, '?' and '#' included.
func TestIDsInPathsAreAddressable(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	for _, id := range []string{".", ".."} {
		b := h.call("POST", "/v1/experiments", bernoulliSpec(id, 2, 1), 400, nil)
		if !strings.Contains(string(b), `"id`) && !strings.Contains(string(b), "id must") {
			t.Errorf("experiment id %q: the refusal does not name the field: %s", id, b)
		}
	}
	for _, id := range []string{"...", ".a", "a.", "a..b", "-", "_"} {
		h.create(bernoulliSpec(id, 2, 1))
		p := "/v1/experiments/" + url.PathEscape(id)
		if clientPath(p) != p {
			t.Fatalf("experiment %q: a client sends %s for %s", id, clientPath(p), p)
		}
		if st := h.state(url.PathEscape(id)); st.ID != id {
			t.Errorf("experiment %q read back as %q", id, st.ID)
		}
	}
	h.create(bernoulliSpec("e", 2, 1))
	for _, unit := range []string{".", ".."} {
		b := h.call("POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "x" + unit, "unit_id": unit}, 400, nil)
		if !strings.Contains(string(b), "unit_id") {
			t.Errorf("unit id %q: the refusal does not name the field: %s", unit, b)
		}
		if code, b := h.do("GET", "/v1/units/"+strings.ReplaceAll(unit, ".", "%2E")+"/ledger", "", nil); code != 400 {
			t.Errorf("unit id %q escaped in the ledger's path: %d %s", unit, code, b)
		}
	}
	for i, unit := range []string{"...", "a/b", "../a", "a/..", "50%", "%2E%2E", "%2F", "a b", "?x#y", "é", `a\b`} {
		ev := fmt.Sprint("ev", i)
		h.decide("e", ev, unit)
		h.reward("e", ev, 1)
		p := "/v1/units/" + url.PathEscape(unit) + "/ledger"
		if clientPath(p) != p {
			t.Fatalf("unit %q: a client sends %s for %s", unit, clientPath(p), p)
		}
		var v LedgerView
		h.call("GET", p, nil, 200, &v)
		if v.Unit != unit {
			t.Errorf("unit %q: the ledger at %s is unit %q's", unit, p, v.Unit)
		}
	}
}
