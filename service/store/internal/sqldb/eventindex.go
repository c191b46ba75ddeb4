package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// The event-id index: the index of the events an experiment no longer
// keeps in memory, by their id (idempotent retries;
// TestLookupsUseTheirKeys). Unique, so that SQLite's planner takes it over
// the primary key's experiment prefix, and so that a second event with
// one id cannot be stored. The event id comes first: an index that began
// with the experiment offered PostgreSQL's generic plans (made on an
// empty table) that prefix for the updates by (exp, seq), which then read
// the experiment's whole history each (TestPostgresPlansUseTheirKeys).
//
// On SQLite it is partial: it holds the events whose ids are folded
// (indexed = 1, fold.go); those decided since their experiment's last
// fold are in memory. A lookup there names the column (Filter), as a
// planner uses a partial index only for queries that imply its
// condition. PostgreSQL indexes every event as it is written, and keeps
// the whole index of the versions before folds, which their replicas'
// lookups use during a rolling update.
type EventIndex struct {
	// Name is the index; On its definition after CREATE [UNIQUE] INDEX
	// [CONCURRENTLY].
	Name, On string
	// Old are earlier versions' (or the other store's) indexes: dropped.
	Old []string
	// Filter ends a lookup by id (QueryEvent): the partial index's
	// condition.
	Filter string
	// PreFolds are the old indexes whose presence shows a store on which
	// a version before folds ran; Repair, run after the index is built,
	// folds such a store.
	PreFolds, Repair []string
}

// IndexEvents builds the event-id index if it is missing and drops the
// earlier versions' (an older version started on the store in between
// builds its own again), in one transaction. It runs once the store is
// held, not in Open: a service that starts beside a live one must wait
// for it before it writes (on SQLite, a build under the write lock would
// make the live service's commits time out and stop it). Live replicas
// build it CONCURRENTLY instead (service/store/postgres).
func (s *DB) IndexEvents(ctx context.Context) error {
	return IndexError(s.indexEventsInTx(ctx))
}

// IndexError is the error of a failed build of the event-id index (nil
// for nil).
func IndexError(err error) error {
	if err != nil {
		return fmt.Errorf("service: building the event-id index: %w", err)
	}
	return nil
}

// indexEventsInTx is IndexEvents's transaction.
func (s *DB) indexEventsInTx(ctx context.Context) error {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ix := s.d.Index
	repair := false
	for _, old := range ix.Old {
		has, err := s.Has(ctx, tx, "index", old)
		if err != nil {
			return err
		}
		if has {
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+old); err != nil {
				return err
			}
			repair = repair || slices.Contains(ix.PreFolds, old)
		}
	}
	if err := s.whenIndex(ctx, tx, ix.Name, false, `CREATE UNIQUE INDEX `+ix.On); err != nil {
		return err
	}
	if repair {
		if err := ExecAll(ctx, tx, ix.Repair...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// whenIndex runs stmt in tx if the store has the index name (present) or
// has not: a statement runs only when it has something to do, since even
// CREATE INDEX IF NOT EXISTS locks the table in PostgreSQL.
func (s *DB) whenIndex(ctx context.Context, tx *sql.Tx, name string, present bool, stmt string) error {
	has, err := s.Has(ctx, tx, "index", name)
	if err != nil || has != present {
		return err
	}
	_, err = tx.ExecContext(ctx, stmt)
	return err
}
