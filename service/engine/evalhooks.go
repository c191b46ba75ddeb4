package engine

import (
	"context"
	"io"
	"time"

	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
)

// What package evaluation (Personalizer's off-policy evaluations of an
// experiment's stored log) uses of an experiment: its key and
// definition (lifecycle.go), Durable, Estimate and EvaluationEnv. None
// of them holds the experiment's lock past its return: an evaluation
// reads the store and reserves its units' debits in the ledger under
// the ledger's own lock, as a live reward's reservation does inside x.mu.

// Durable waits until every change the experiment submitted is
// committed, so that its stored log holds every acknowledged reward.
func (x *Experiment) Durable(ctx context.Context) error {
	x.mu.Lock()
	last := x.last
	x.mu.Unlock()
	if last == nil {
		return nil
	}
	return x.env.Writer.Wait(ctx, last)
}

// Estimate returns the learner's released estimate theta (the model
// GET's, Model.Theta), once every release it reflects is durable:
// NotFound for a learner that exports none.
func (x *Experiment) Estimate(ctx context.Context) ([]float64, error) {
	m, err := x.Model(ctx)
	return m.Theta, err
}

// EvaluationStore is what an evaluation reads and writes of the store:
// the experiment's log and its evaluations' rows.
type EvaluationStore interface {
	// Log is store.Histories.Log.
	Log(ctx context.Context, exp string, fn func(store.Event) error) error
	store.Evaluations
}

// EvaluationEnv is what an evaluation uses of the service around an
// experiment (the fields of its Env of the same names).
type EvaluationEnv struct {
	Store EvaluationStore
	// Ledger holds the units' ledgers, where an evaluation reserves its
	// units' debits; Unreserved is Env.Unreserved (the store adds the
	// debits to the units' spend rows).
	Ledger     *ledger.Ledger
	Unreserved bool
	// KeepLog: the service keeps the log (--keep-log), which an
	// evaluation reads.
	KeepLog bool
	Now     func() time.Time
	// Entropy feeds the releases' secure noise (nil: crypto/rand's).
	Entropy io.Reader
}

// EvaluationEnv returns what an evaluation uses of the service around
// the experiment.
func (x *Experiment) EvaluationEnv() EvaluationEnv {
	e := x.env
	return EvaluationEnv{Store: e.Store, Ledger: e.Ledger, Unreserved: e.Unreserved, KeepLog: e.KeepLog, Now: e.Now, Entropy: e.Entropy}
}
