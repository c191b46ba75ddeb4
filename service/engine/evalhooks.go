package engine

import (
	"context"
	"io"
	"time"

	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
)

// Evaluating is what an evaluation of an experiment's stored log
// (package evaluation) uses of the service around it: the fields of its
// Env of the same names, and none of its writer, which only the
// experiment submits to.
type Evaluating struct {
	// Store is the experiment's log and its evaluations' rows.
	Store EvaluationStore
	// Ledger holds the units' ledgers, where an evaluation reserves its
	// units' debits; Unreserved: the store adds the debits to the
	// units' spend rows (Env.Unreserved).
	Ledger     *ledger.Ledger
	Unreserved bool
	// KeepLog: the service keeps the log (--keep-log), which an
	// evaluation reads.
	KeepLog bool
	Now     func() time.Time
	// Entropy feeds the releases' secure noise (nil: crypto/rand's).
	Entropy io.Reader
}

// EvaluationStore is what an evaluation reads and writes of the store
// (the engine's Store is one).
type EvaluationStore interface {
	// Log is store.Histories.Log.
	Log(ctx context.Context, exp string, fn func(store.Event) error) error
	store.Evaluations
}

// Evaluating returns what an evaluation of the experiment's log uses of
// the service around it (shared by all the experiments: nothing may
// change it).
func (x *Experiment) Evaluating() Evaluating {
	e := x.env
	return Evaluating{Store: e.Store, Ledger: e.Ledger, Unreserved: e.Unreserved, KeepLog: e.KeepLog, Now: e.Now, Entropy: e.Entropy}
}

// Now returns the service's time.
func (x *Experiment) Now() time.Time { return x.env.Now() }
