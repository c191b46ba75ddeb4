package engine

import (
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// BenchmarkEvaluation times an evaluation of a SQLite log of 5,000
// ranks (1 to 3 eligible actions of 3) with its four targets: three
// passes over the log streamed from the store (ope's two, the counts'
// one), each event padded to 50 actions of 33 numbers.
func BenchmarkEvaluation(b *testing.B) {
	h := start(b, storetest.SQLite(b), config{KeepLog: true})
	h.create(personalizerSpec("pz"))
	evalRounds(h, "e", 5000, true, 1)
	b.ResetTimer()
	for i := range b.N {
		if _, err := h.get("pz").CreateEvaluation(contextBG(), fmt.Sprint("b", i), evalRequest("current")); err != nil {
			b.Fatal(err)
		}
	}
}
