package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
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
// Partial: it holds the events whose ids are folded (indexed = 1,
// fold.go); those decided since their experiment's last fold are in
// memory. A lookup names the column (queryEvent), as a planner uses a
// partial index only for queries that imply its condition.
const eventIndex = `events_id_exp_folded`

// oldEventIndexes are the event-id indexes of earlier versions: whole
// (events_id_exp), not unique, or with the experiment first.
var oldEventIndexes = []string{"events_id_exp", "events_by_id", "events_by_event_id"}

// indexEvents builds the event-id index if it is missing and drops the
// earlier versions' (an older version started on the store in between
// builds its own again). It runs once the store is held, not in Open: a
// service that starts beside a live one must wait for it before it
// writes (on SQLite, a build under the write lock would make the live
// service's commits time out and stop it). concurrent: live replicas
// share the store, and on PostgreSQL the index is then built and the old
// ones dropped CONCURRENTLY, which blocks none of their reads and writes
// (one replica at a time, under an advisory lock; an index left invalid
// by an interrupted build is built again).
func (s *sqlStore) indexEvents(ctx context.Context, concurrent bool) error {
	index := s.indexEventsInTx
	if s.postgres && concurrent {
		index = s.indexEventsConcurrently
	}
	if err := index(ctx); err != nil {
		return fmt.Errorf("service: building the event-id index: %w", err)
	}
	return nil
}

// eventIndexOn is the event-id index's definition after CREATE [UNIQUE]
// INDEX [CONCURRENTLY].
const eventIndexOn = eventIndex + ` ON events (event_id, exp) WHERE indexed = 1`

// indexEventsInTx is indexEvents in one transaction.
func (s *sqlStore) indexEventsInTx(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.whenIndex(ctx, tx, eventIndex, false, `CREATE UNIQUE INDEX `+eventIndexOn); err != nil {
		return err
	}
	for _, old := range oldEventIndexes {
		has, err := s.has(ctx, tx, "index", old)
		if err != nil {
			return err
		}
		if !has {
			continue
		}
		// A version before folds built it at its start, and indexed and
		// debited as it wrote, moving no fold cursor: everything it
		// wrote is folded (fold.go).
		if _, err := tx.ExecContext(ctx, `DROP INDEX `+old); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE experiments SET folded = `+strconv.FormatInt(math.MaxInt64, 10)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// indexEventsConcurrently is indexEvents beside live replicas
// (PostgreSQL): CONCURRENTLY, one replica at a time.
func (s *sqlStore) indexEventsConcurrently(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryKey+2)); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(advisoryKey+2))
	var valid sql.NullBool // NULL: no index
	err = conn.QueryRowContext(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, eventIndex).Scan(&valid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var stmts []string
	if valid.Valid && !valid.Bool {
		stmts = append(stmts, `DROP INDEX CONCURRENTLY `+eventIndex)
	}
	if !valid.Bool {
		stmts = append(stmts, `CREATE UNIQUE INDEX CONCURRENTLY `+eventIndexOn)
	}
	for _, old := range oldEventIndexes {
		stmts = append(stmts, `DROP INDEX CONCURRENTLY IF EXISTS `+old)
	}
	for _, st := range stmts {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// whenIndex runs stmt in tx if the store has the index name (present) or
// has not: a statement runs only when it has something to do, since even
// CREATE INDEX IF NOT EXISTS locks the table in PostgreSQL.
func (s *sqlStore) whenIndex(ctx context.Context, tx *sql.Tx, name string, present bool, stmt string) error {
	has, err := s.has(ctx, tx, "index", name)
	if err != nil || has != present {
		return err
	}
	_, err = tx.ExecContext(ctx, stmt)
	return err
}
