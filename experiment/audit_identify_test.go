package experiment

import (
	"testing"

	"github.com/dpbandit/dpbandit/privacy"
)

// TestAuditIdentifications: the private best-arm identifications pass
// the audit of their decisions at eps = 1, and their variants with the
// noise divided by 10 fail, at 4000 trials per table (measured at 20,000
// trials with dpbandit audit: sound adap-tt eps_lo 0.27, dp-se-bai 0.81;
// noise/10 6.06 and 5.61, against a claim of 1), and AdaP-TT's variant
// that re-draws its noise at every step fails too. On the default tables
// AdaP-TT's first release of arm 0 is its one differing reward with
// Lap(1/eps), and the leader it picks hinges on it.
func TestAuditIdentifications(t *testing.T) {
	c := DefaultAudit()
	c.Runs = 4000
	c.Budget, _ = privacy.NewPure(1)
	for _, algo := range []string{"adap-tt", "adap-tt:threshold=theory", "dp-se-bai"} {
		for _, brk := range []string{"", "scale", "redraw"} {
			if brk == "redraw" && algo != "adap-tt" {
				continue
			}
			r := auditOf(t, c, algo, brk)
			if r.Passed != (brk == "") || !r.Expected || (brk == "" && r.NoPower != "") {
				t.Errorf("%s: eps_lo %v against %v: %s", r.Label, r.EpsLo, r.EpsClaimed, r.Verdict())
			}
		}
	}
}
