package engine

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
)

// Env is what an experiment needs of the service that runs it, shared by
// all its experiments.
type Env struct {
	// Store is read for what memory does not hold (events no longer
	// kept, units' counts, histories at a load), and written directly
	// only by a load before the writer starts (Writer nil).
	Store Store
	// Writer commits the changes, in the order they were submitted.
	Writer Writer
	// Ledger is the units' spend across experiments.
	Ledger *ledger.Ledger
	// IDs is the server's id filter; each experiment's event ids are a
	// namespace of it.
	IDs *bloom.Filter
	// Metrics are the service's counters.
	Metrics *Metrics
	// Now is the clock; Entropy the randomness of noise and policies
	// (nil: crypto/rand); Logger logs.
	Now     func() time.Time
	Entropy io.Reader
	Logger  *slog.Logger
	// KeepLog keeps every reward (for off-policy evaluation and the log
	// export) instead of deleting those of released blocks.
	KeepLog bool
	// KeepEvents is the number of settled events an experiment keeps in
	// memory for retries; KeepUnits the units whose counts it caches.
	KeepEvents, KeepUnits int
	// SnapshotEvery is the number of operations between snapshots
	// (0: 16384).
	SnapshotEvery int64
	// Eager: every change folds its own writes (the store writes as it
	// goes: store.Committer.WritesAsItGoes).
	Eager bool
	// Unreserved: the debits are not reserved in the units' spend rows
	// (a replica without a cap), and each fold adds them there
	// (store.Fold.Unreserved).
	Unreserved bool
	// Holds, on a replica, returns nil if this replica still holds the
	// lease of experiment exp, else the error to answer (nil Holds: a
	// single service, which holds all). An event id that neither memory
	// nor the store knows is answered unknown only once it returns nil
	// (unknown.go).
	Holds func(ctx context.Context, exp string) error
}

// Store is what the engine reads and, at a load, writes.
type Store interface {
	store.Histories
	store.Units
	store.Committer
	store.Evaluations
}

// Writer commits changes in the order they are submitted (the service's
// group-commit writer).
type Writer interface {
	// Submit queues a change, whose Durable channel is closed once it
	// is committed (and its Folded channel, if set); it fails if the
	// writer stopped.
	Submit(c *store.Change) error
	// Wait waits until durable is closed, the writer fails (an
	// Unavailable error) or ctx ends.
	Wait(ctx context.Context, durable chan struct{}) error
	// Failed returns the store failure that stopped the writer, if any.
	Failed() error
}

// Metrics are the counters an experiment moves, labelled by experiment.
type Metrics struct {
	// Decisions counts decisions (retries not counted).
	Decisions *prometheus.CounterVec
	// Rewards counts rewards settled, by status.
	Rewards *prometheus.CounterVec
	// Ignored counts rewards acknowledged but not learned, by reason.
	Ignored *prometheus.CounterVec
	// Releases counts noisy values released.
	Releases *prometheus.CounterVec
}
