package engine

import (
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

func TestTmpMem(t *testing.T) {
	h := start(t, storetest.SQLite(t), config{KeepEvents: 100})
	h.create(personalizerSpec("pz"))
	x := h.get("pz")
	for i := range 5000 {
		ev := fmt.Sprint("e", i)
		h.rank("pz", storetest.RankBody(ev, nil, false))
		h.get("pz").Reward(contextBG(), ev, float64(i%2))
		if i%1000 == 999 {
			x.mu.Lock()
			t.Logf("%d: events %d settled %d queue %d slots %d greedy %d", i, len(x.events), len(x.settled), len(x.queue), len(x.slots), len(x.appr.Greedy))
			x.mu.Unlock()
		}
	}
}
