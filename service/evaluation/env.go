package evaluation

import (
	"context"
	"io"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
)

// Store is what an evaluation reads and writes of the store: the
// experiment's log and its evaluations' rows (the engine's store,
// engine.Store, is one).
type Store interface {
	// Log is store.Histories.Log.
	Log(ctx context.Context, exp string, fn func(store.Event) error) error
	store.Evaluations
}

// env is what an evaluation uses of the service around an experiment:
// the fields of its engine.Env of the same names.
type env struct {
	Store Store
	// Ledger holds the units' ledgers, where an evaluation reserves its
	// units' debits; Unreserved is engine.Env.Unreserved (the store adds
	// the debits to the units' spend rows).
	Ledger     *ledger.Ledger
	Unreserved bool
	// KeepLog: the service keeps the log (--keep-log), which an
	// evaluation reads.
	KeepLog bool
	Now     func() time.Time
	// Entropy feeds the releases' secure noise (nil: crypto/rand's).
	Entropy io.Reader
}

// envOf returns what an evaluation uses of e.
func envOf(e engine.Env) env {
	return env{Store: e.Store, Ledger: e.Ledger, Unreserved: e.Unreserved, KeepLog: e.KeepLog, Now: e.Now, Entropy: e.Entropy}
}
