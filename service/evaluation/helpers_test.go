package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/rank"
	"github.com/dpbandit/dpbandit/service/store/memstore"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// personalizerSpec is a Personalizer experiment's creation.
func personalizerSpec(id string) map[string]any {
	return map[string]any{"id": id, "surface": "personalizer", "privacy": map[string]float64{"rho": 1}}
}

// rankOn ranks a request (JSON) on experiment id, once durable.
func rankOn(t testing.TB, h *enginetest.Harness, id string, body map[string]any) rank.Response {
	t.Helper()
	r, err := rank.Decide(context.Background(), h.Get(id), mustJSON(t, body), "")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mem returns the harness's in-memory store (enginetest.MemDSN).
func mem(t testing.TB, h *enginetest.Harness) *memstore.Store {
	t.Helper()
	m, ok := h.Store.(*memstore.Store)
	if !ok {
		t.Fatalf("the harness's store is a %T, not the in-memory fake", h.Store)
	}
	return m
}

// errDown is the fake store's failure.
var errDown = errors.New("the store is down")

// failing makes the harness's fake store fail the operations named.
func failing(t testing.TB, h *enginetest.Harness, ops ...string) {
	mem(t, h).FailWith(func(op string) error {
		if slices.Contains(ops, op) {
			return errDown
		}
		return nil
	})
}
