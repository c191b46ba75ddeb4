package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/dpbandit/dpbandit/service/commit"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/stores"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestUnitSpendPinnedUntilEveryDebitCommits: two experiments debit one
// unit; the later one's fold commits first while the earlier one's is
// still to come. The unit's cached total must not be evicted (and
// reloaded from the store without the debit in flight) until both are
// committed, or the unit could pass its cap. Found by an independent
// review.
func TestUnitSpendPinnedUntilEveryDebitCommits(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	st, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Own(context.Background(), "test", nil); err != nil {
		t.Fatal(err)
	}
	w := commit.New(st, func(error) {}, nil, nil)
	defer w.Close()
	s := New(st, nil, 3e9, 1, bloom.NewFilter(1<<16), slog.New(slog.DiscardHandler)) // room for one unit: every durable entry is evicted
	u := store.UnitKey{Tenant: "default", Unit: "U"}
	dA, dB := make(chan struct{}), make(chan struct{})
	if _, ok, err := s.Reserve(u, "default/a", 2e9, dA); !ok || err != nil { // experiment A: not yet submitted
		t.Fatal(ok, err)
	}
	if _, ok, err := s.Reserve(u, "default/b", 0.5e9, dB); !ok || err != nil { // experiment B
		t.Fatal(ok, err)
	}
	// B's fold commits (store: 0.5e9 for U), A's not yet.
	w.Submit(&store.Change{Exp: "default/b", Fold: &store.Fold{Debits: []store.Debit{{Unit: "U", Rewards: 1, Nano: 0.5e9}}}, Folded: dB})
	<-dB
	for i := range 3 { // other units take the room: eviction
		c := make(chan struct{})
		close(c)
		s.Reserve(store.UnitKey{Tenant: "default", Unit: fmt.Sprint("v", i)}, "default/b", 1, c)
	}
	e, ok, _ := s.Reserve(u, "default/a", 2e9, make(chan struct{}))
	if ok {
		t.Fatalf("U reached %d nano-rho of a 3e9 cap (2e9 in flight + 0.5e9 + 2e9)", e.N)
	}
}
