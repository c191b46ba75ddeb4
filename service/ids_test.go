package service

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

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
		b := h.call("POST", "/v1/experiments", storetest.BernoulliSpec(id, 2, 1), 400, nil)
		if !strings.Contains(string(b), `"id`) && !strings.Contains(string(b), "id must") {
			t.Errorf("experiment id %q: the refusal does not name the field: %s", id, b)
		}
	}
	for _, id := range []string{"...", ".a", "a.", "a..b", "-", "_"} {
		h.create(storetest.BernoulliSpec(id, 2, 1))
		p := "/v1/experiments/" + url.PathEscape(id)
		if clientPath(p) != p {
			t.Fatalf("experiment %q: a client sends %s for %s", id, clientPath(p), p)
		}
		if st := h.state(url.PathEscape(id)); st.ID != id {
			t.Errorf("experiment %q read back as %q", id, st.ID)
		}
	}
	h.create(storetest.BernoulliSpec("e", 2, 1))
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
		var v api.LedgerView
		h.call("GET", p, nil, 200, &v)
		if v.Unit != unit {
			t.Errorf("unit %q: the ledger at %s is unit %q's", unit, p, v.Unit)
		}
	}
}
