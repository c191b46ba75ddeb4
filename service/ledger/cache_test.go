package ledger

import (
	"fmt"
	"testing"
)

// TestCacheFullOfPinnedEntriesEvictsRarely: when every entry is pinned by
// a fold not yet committed (an import's units: its operations commit
// together at its end), an eviction frees nothing, and trying again at
// every miss made n misses cost n^2/2 entry visits (an import of 80 000
// events' units did not finish in 5 minutes). After an eviction that
// leaves the cache full, the next is tried only once cap/2 more entries
// came: n misses try at most 2n/cap + 1 evictions, and a pinned entry is
// still never evicted.
func TestCacheFullOfPinnedEntriesEvictsRarely(t *testing.T) {
	const capacity, n = 100, 5000
	c := NewCache(capacity)
	fold := make(chan struct{}) // never closed: every entry stays pinned
	for i := range n {
		e, err := c.Get(fmt.Sprint(i), func() (int64, error) { return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		e.N++
		e.Pin(fold)
	}
	if c.Len() != n {
		t.Fatalf("%d entries kept of %d pinned ones", c.Len(), n)
	}
	if most := 2*n/capacity + 1; c.evictions > most {
		t.Fatalf("%d evictions tried for %d misses over a cache of %d, want at most %d", c.evictions, n, capacity, most)
	}
	close(fold) // the fold commits: the next miss evicts down to half
	c.Get("new", func() (int64, error) { return 0, nil })
	if c.Len() > capacity/2+1 {
		t.Fatalf("after the fold committed, %d entries kept, want at most %d", c.Len(), capacity/2+1)
	}
}
