package ope

import (
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestReleaseKeyKeepsItsWords pins the ledger key's text, as ledgers
// written before ReleaseSpec record it: a changed word would draw a
// recorded release again.
func TestReleaseKeyKeepsItsWords(t *testing.T) {
	b, _ := mechanism.NewBounds(0, 1)
	rho, _ := privacy.NewZCDP(0.5)
	s := ReleaseSpec{LogDigest: "ab12", Policy: "uniform", Target: Uniform{}, Estimator: "ips", Clip: 5, Rewards: b, Arms: 3, Budget: rho}
	for _, c := range []struct {
		edit func(*ReleaseSpec)
		want string
	}{
		{func(*ReleaseSpec) {}, "sha256:ab12 policy=uniform clip=5 range=[0, 1] budget=rho=0.5 arms=3"},
		{func(s *ReleaseSpec) { s.Estimator = "dr"; s.Target = Linear{Model: "cd"}; s.Policy = "linear:m.json" },
			"sha256:ab12 policy=linear:m.json clip=5 range=[0, 1] budget=rho=0.5 arms=3 model=sha256:cd estimator=dr"},
		{func(s *ReleaseSpec) {
			s.Target = &Dist{Digest: "ef"}
			s.MaxEventsPerUnit = 4
			s.Reading = "dsjson bits=8"
		},
			"sha256:ab12 policy=uniform clip=5 range=[0, 1] budget=rho=0.5 arms=3 dist=sha256:ef max-events-per-unit=4 reading=dsjson bits=8"},
	} {
		s := s
		c.edit(&s)
		if got := s.Key(); got != c.want {
			t.Errorf("key %q, want %q", got, c.want)
		}
	}
}
