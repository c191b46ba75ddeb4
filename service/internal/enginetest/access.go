package enginetest

import (
	"errors"
	"slices"

	"github.com/dpbandit/dpbandit/service/store/memstore"
)

// DSN returns the store the harness runs on (MemDSN: the in-memory
// fake), for a test that reads or changes its rows directly.
func (h *Harness) DSN() string { return h.dsn }

// Config returns the harness's configuration: a change to it applies
// from the next Open (or Restart), as a change of the service's flags
// between two runs would.
func (h *Harness) Config() *Config { return &h.cfg }

// Mem returns the in-memory fake the harness runs on (Start with
// MemDSN); the test fails on another store.
func (h *Harness) Mem() *memstore.Store {
	h.t.Helper()
	if h.mem == nil {
		h.t.Fatalf("the harness runs on %q, not on the in-memory fake", h.dsn)
	}
	return h.mem
}

// ErrDown is the in-memory fake's failure that Failing injects.
var ErrDown = errors.New("enginetest: the store is down")

// Failing makes the in-memory fake fail the operations named (memstore's
// operation names: "Event", "Commit", ...) with ErrDown, until
// h.Mem().FailWith(nil).
func (h *Harness) Failing(ops ...string) {
	h.t.Helper()
	h.Mem().FailWith(func(op string) error {
		if slices.Contains(ops, op) {
			return ErrDown
		}
		return nil
	})
}
