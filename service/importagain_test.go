package service

import (
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestImportAgainCountsAsTheFirst: the same log sent again changes
// nothing, and its answer counts its records as they are: the events
// the first import used as already imported, the id of a live decision
// and a repeated id as such, and the events the first import did not
// reach as unused. The answer called every record of the log already
// imported (300 of 302 here, where the first import used a part), events
// no import had used among them.
func TestImportAgainCountsAsTheFirst(t *testing.T) {
	eachStore(t, Config{Entropy: rand.NewChaCha8([32]byte{4})}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("again", 3, 0.5))
		h.decide("again", "live1", "bob")
		log := logRecord("live1", "bob", 0, 1, 1.0/3) + uniformLog([]float64{0.2, 0.5, 0.8}, 300, 2, "x") + logRecord("x7", "", 1, 0, 1.0/3)
		first := h.importLog("again", "", "application/x-ndjson", log, 200)
		if first.Unused == 0 {
			t.Fatalf("first import used every event (%+v): the test needs some unused", first.ImportResult)
		}
		second := h.importLog("again", "", "application/x-ndjson", log, 200)
		if second.Operations != 0 || second.Events != 0 {
			t.Fatalf("the same log again did something: %+v", second.ImportResult)
		}
		if int64(second.AlreadyImported) != first.Events || second.Unused != first.Unused || second.LiveIDs != first.LiveIDs || second.Duplicates != first.Duplicates {
			t.Fatalf("the same log again: already imported %d, unused %d, live ids %d, duplicates %d; want %d, %d, %d, %d (the first import's events, unused, live ids, duplicates)",
				second.AlreadyImported, second.Unused, second.LiveIDs, second.Duplicates, first.Events, first.Unused, first.LiveIDs, first.Duplicates)
		}
	})
}
