// Package postgres is the service's store on a PostgreSQL database: one
// service writes it (store.Owner), or several replicas share it, each
// experiment held by one of them through a lease (store.Replicated).
// Every commit indexes its events and debits its ledger rows itself
// (store.Committer's WritesAsItGoes).
package postgres

import (
	"context"
	"database/sql"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/service/internal/sqlq"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Store is the store on a PostgreSQL database.
type Store struct {
	*sqldb.DB
	live    *advisory  // the liveness lock (owner.go)
	lease   leaseState // a replica's leases (lease.go)
	aborted atomic.Int64
}

// dialect is PostgreSQL's SQL.
var dialect = sqldb.Dialect{
	Real: "DOUBLE PRECISION", Blob: "BYTEA",
	Bind: sqlq.Dollar,
	Has: func(typ, name string) (string, []any) {
		if typ == "table" {
			return `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, []any{name}
		}
		return `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, []any{name}
	},
	Columns: `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`,
	Index:   eventIndex,
}

// schema is the migration: processes opening the same database at once
// migrate one at a time (concurrent DDL on one catalogue row fails); the
// tables both stores have, then the fences and the replicas' tables.
var schema = append([]string{`SELECT pg_advisory_xact_lock(` + strconv.Itoa(advisoryKey+1) + `)`},
	append(sqldb.Schema(dialect), fenceFunction, leaseTable, replicaTable, replicaTTL, settingsTable, spendTable, leaseFence)...)

// Open opens (and creates or migrates) the store at url, a postgres://
// or postgresql:// URL.
func Open(ctx context.Context, url string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	// Keep the connections of concurrent reads (database/sql keeps 2
	// idle by default; each new one is a PostgreSQL backend started:
	// forwarded requests fell from 2,450 to 460 pairs/s without).
	db.SetMaxIdleConns(64)
	live := &advisory{db: db}
	shared, err := sqldb.Open(ctx, db, dialect, live, schema)
	if err != nil {
		return nil, err
	}
	return &Store{DB: shared, live: live}, nil
}

// WritesAsItGoes is true: every change folds its own writes
// (store.Fold); replicas share the store, and read one another's ledger
// rows.
func (s *Store) WritesAsItGoes() bool { return true }

// CreateExperiment stores a new experiment, folded through all it
// writes (PostgreSQL folds as it goes, fold.go). A replica takes its
// lease in the same transaction.
func (s *Store) CreateExperiment(ctx context.Context, e store.Experiment) error {
	return s.Create(ctx, e, math.MaxInt64, func(tx *sql.Tx) (func(), error) {
		if !s.replica() {
			return nil, s.fence(ctx, tx)
		}
		// The creator holds the new experiment's lease.
		var epoch int64
		if err := tx.QueryRowContext(ctx, acquireLease, e.Key, s.lease.me.ID, s.ttlMillis()).Scan(&epoch); err != nil {
			return nil, err
		}
		return func() { s.setEpoch(e.Key, epoch) }, nil
	})
}

// Commit writes a batch in one transaction, as one pipelined pgx batch
// (one round trip for the whole group, run by the server as one
// implicit transaction). It checks the owner's epoch, or each written
// experiment's lease, in the same transaction, last (owner.go,
// lease.go). A transaction aborted for a deadlock or a serialisation
// failure is run again (retryAborted): nothing of it was committed.
func (s *Store) Commit(ctx context.Context, batch []*store.Change) error {
	if s.Epoch() == 0 && !s.replica() {
		return sqldb.ErrNotOwned
	}
	return s.retryAborted(ctx, func() error { return s.commit(ctx, batch) })
}

// commit is Commit's transaction, one pipelined batch: a statement that
// fails rolls the whole batch back (Commit runs it again if PostgreSQL
// aborted it: retryAborted).
func (s *Store) commit(ctx context.Context, batch []*store.Change) error {
	conn, err := s.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		b := &pgx.Batch{}
		sqldb.Writes(batch, false, false, func(st int, args ...any) error {
			b.Queue(sqlq.Dollar(sqldb.Queries[st]), args...)
			return nil
		})
		if s.replica() {
			if err := s.fenceLeases(batch, func(q string, args ...any) { b.Queue(q, args...) }); err != nil {
				return err
			}
			return fenced(pc.SendBatch(ctx, b).Close())
		}
		b.Queue(fenceCall, s.Epoch())
		return s.whyFailed(ctx, fenced(pc.SendBatch(ctx, b).Close()))
	})
}
