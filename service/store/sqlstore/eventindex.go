package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dpbandit/dpbandit/service/store"
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
// fold are in memory. A lookup there names the column (foldedOnly), as a
// planner uses a partial index only for queries that imply its
// condition. PostgreSQL indexes every event as it is written, and keeps
// the whole index of the versions before folds, which their replicas'
// lookups use during a rolling update.
type eventIndexes struct {
	name, on string   // the index, and its definition after CREATE [UNIQUE] INDEX [CONCURRENTLY]
	old      []string // earlier versions' (or the other store's): dropped
}

// The event-id indexes of SQLite and PostgreSQL.
var (
	sqliteEventIndex = eventIndexes{"events_id_exp_folded", "events_id_exp_folded ON events (event_id, exp) WHERE indexed = 1",
		[]string{"events_id_exp", "events_by_id", "events_by_event_id"}}
	postgresEventIndex = eventIndexes{"events_id_exp", "events_id_exp ON events (event_id, exp)",
		[]string{"events_id_exp_folded", "events_by_id", "events_by_event_id"}}
)

// eventIndex returns the store's event-id indexes.
func (s *sqlStore) eventIndex() eventIndexes {
	if s.postgres {
		return postgresEventIndex
	}
	return sqliteEventIndex
}

// preFolds are the event-id indexes of SQLite's versions before folds,
// which each builds at its start: finding one, a store's events and
// ledger are repaired (indexEventsInTx).
var preFolds = []string{"events_id_exp", "events_by_id", "events_by_event_id"}

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

// indexEventsInTx is indexEvents in one transaction.
func (s *sqlStore) indexEventsInTx(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ix := s.eventIndex()
	repair := false
	for _, old := range ix.old {
		has, err := s.has(ctx, tx, "index", old)
		if err != nil {
			return err
		}
		if has {
			if _, err := tx.ExecContext(ctx, `DROP INDEX `+old); err != nil {
				return err
			}
			repair = repair || !s.postgres && slices.Contains(preFolds, old)
		}
	}
	if err := s.whenIndex(ctx, tx, ix.name, false, `CREATE UNIQUE INDEX `+ix.on); err != nil {
		return err
	}
	if repair {
		if err := execAll(ctx, tx, repairPreFolds...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// repairPreFolds folds a SQLite store on which a version before folds
// ran (it built its index at its start, and indexed and debited as it
// wrote, moving no cursor): every event is indexed (that version's
// index, unique on every event, kept the ids unique), each ledger row is
// at least its events' learned rewards and debits (a tail this version
// left unfolded at a crash is in the events, not in the ledger), and
// every experiment is folded through all it wrote.
var repairPreFolds = []string{
	`UPDATE events SET indexed = 1 WHERE indexed = 0`,
	`INSERT INTO ledger (unit_id, exp, rewards, nano)
		SELECT unit_id, exp, COUNT(*), SUM(debit) FROM events WHERE status IN ('` + store.Learned + `', '` + store.Defaulted + `') GROUP BY unit_id, exp
		ON CONFLICT (unit_id, exp) DO UPDATE SET rewards = max(ledger.rewards, excluded.rewards), nano = max(ledger.nano, excluded.nano)`,
	`UPDATE experiments SET folded = ` + strconv.FormatInt(math.MaxInt64, 10),
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
	ix := s.eventIndex()
	var valid sql.NullBool // NULL: no index
	err = conn.QueryRowContext(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, ix.name).Scan(&valid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var stmts []string
	if valid.Valid && !valid.Bool {
		stmts = append(stmts, `DROP INDEX CONCURRENTLY `+ix.name)
	}
	if !valid.Bool {
		stmts = append(stmts, `CREATE UNIQUE INDEX CONCURRENTLY `+ix.on)
	}
	for _, old := range ix.old {
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
