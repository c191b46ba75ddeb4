package define

import (
	"encoding/json"
	"testing"

	"github.com/dpbandit/dpbandit/service/fault"
)

// TestUnitOfFastAndSlow reads the unit of a handful of rank requests
// as the hot path reads them (the fast scanner) and through encoding/json: the same unit, or
// the same refusal, and the expected one.
func TestUnitOfFastAndSlow(t *testing.T) {
	acts := `"actions":[{"id":"a","features":[{"x":1}]}]`
	cases := []struct{ ctx, want string }{
		{`[{"user":{"id":"u1"}}]`, "u1"},
		{`[{"device":{"os":"ios"}}, { "user" : { "tier":"gold", "id" : "u 2" } }]`, "u 2"},
		{`[{"user":{"id":42}}]`, "42"},
		{`[{"user":{"id":42.0}}]`, "42"},
		{`[{"user":{"id":4.2e1}}]`, "42"},
		{`[{"user":{"id":12345678901234567890123}}]`, "12345678901234567890123"},
		{`[{"user":{"id":"\u00e9"}}]`, "é"},
		{`[{"user":{"name":"x"}},{"user":{"id":"second"}}]`, ""}, // the first object with "user" decides
		{`[{"user":{"id":true}}]`, ""},
		{`[{"user":{"id":null}}]`, ""},
		{`[{"user":{"id":""}}]`, ""},
		{`[{"user":{"id":".."}}]`, ""}, // (a unit whose ledger no URL reaches: CheckPathID)
		{`[{"user":"u1"}]`, ""},
		{`[{"id":"u1"}]`, ""},
		{`[]`, ""},
	}
	for _, c := range cases {
		raw := []byte(`{"contextFeatures":` + c.ctx + `,` + acts + `}`)
		fast, _, err := decodeRank(raw, nil) // the fast scanner when it can (not on escapes)
		if err != nil {
			t.Fatal(err)
		}
		var slow RankRequest
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatal(err)
		}
		uf, errF := UnitOf(fast.ContextFeatures, "user.id")
		us, errS := UnitOf(slow.ContextFeatures, "user.id")
		if uf != us || (errF == nil) != (errS == nil) {
			t.Errorf("%s: fast %q, %v; slow %q, %v", c.ctx, uf, errF, us, errS)
		}
		if uf != c.want {
			t.Errorf("%s: unit %q, want %q (%v)", c.ctx, uf, c.want, errF)
		}
		if c.want == "" && fault.Of(errF) != fault.Invalid {
			t.Errorf("%s: %v, want fault.Invalid", c.ctx, errF)
		}
	}
}

// TestCheckUnitFeature checks the spec's path at creation.
func TestCheckUnitFeature(t *testing.T) {
	for _, p := range []string{"user.id", "user", "a.b.c.d"} {
		if err := CheckUnitFeature(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"user.", ".id", "a..b", "a.b.c.d.e", "a\x00"} {
		if err := CheckUnitFeature(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	rho := 1.0
	s := Spec{ID: "x", Surface: SurfacePersonalizer, UnitFeature: "user..id", Privacy: Privacy{Rho: &rho}}
	if _, _, _, err := s.validate(); err == nil {
		t.Error("a spec with unit_feature user..id validated")
	}
	s = Spec{ID: "x", UnitFeature: "user.id", Algorithm: "adac-ucb", Arms: 2, RewardRange: [2]float64{0, 1}, Privacy: Privacy{Rho: &rho}}
	if _, _, _, err := s.validate(); err == nil {
		t.Error("unit_feature on the service's own surface validated")
	}
}

// BenchmarkUnitOf reads the unit of the preview specification's context
// (four feature objects, the user's first): what a unit_feature adds to a
// rank.
func BenchmarkUnitOf(b *testing.B) {
	raw := []byte(`{"contextFeatures":[{"user":{"id":"u-829","profileType":"AnonymousUser","latLong":"47.6,-122.1"}},
	    {"environment":{"dayOfMonth":"28","monthOfYear":"8","weather":"Sunny"}},
	    {"device":{"mobile":true,"windows":true}},{"recentActivity":{"itemsInCart":3}}],
	  "actions":[{"id":"a","features":[{"x":1}]}]}`)
	req, _, err := decodeRank(raw, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := UnitOf(req.ContextFeatures, "user.id"); err != nil {
			b.Fatal(err)
		}
	}
}
