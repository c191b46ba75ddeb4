package evaluation

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// BenchmarkEvaluation times an evaluation of a SQLite log of 5,000
// ranks (1 to 3 eligible actions of 3) with its four targets: three
// passes over the log streamed from the store (ope's two, the counts'
// one), each event padded to 50 actions of 33 numbers, and its 5,000
// units' debits: without a cap (no_cap), under one with every unit's
// total cached (cap), and under one after a restart with a cache of 16
// units (cap_uncached: each unit's total read from the store).
func BenchmarkEvaluation(b *testing.B) {
	for _, c := range []struct {
		name    string
		cfg     enginetest.Config
		restart bool
	}{
		{"no_cap", enginetest.Config{KeepLog: true}, false},
		{"cap", enginetest.Config{KeepLog: true, UnitBudget: 1000e9}, false},
		{"cap_uncached", enginetest.Config{KeepLog: true, UnitBudget: 1000e9, KeepUnits: 16}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := enginetest.Start(b, storetest.SQLite(b), c.cfg)
			h.Create(personalizerSpec("pz"))
			evalRounds(b, h, "e", 5000, true, 1)
			if c.restart {
				h.Restart()
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := Create(context.Background(), h.Get("pz"), fmt.Sprint("b", i), evalRequest("current")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
