// Package sqldb is what the service's two SQL stores share
// (service/store/sqlite and service/store/postgres): the schema's common
// tables and its migrations, the statements of a commit (Writes), the
// reads and their row scanners, the owner row and the event-id index,
// written once over database/sql and parameterised by a Dialect.
package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"

	"github.com/dpbandit/dpbandit/service/store"
)

// Dialect is what the two databases' SQL differs in, where the rest is
// shared.
type Dialect struct {
	// Real and Blob are the column types of a float and of bytes;
	// TableEnd ends a keyed table's definition (SQLite's WITHOUT ROWID:
	// one b-tree per table instead of two).
	Real, Blob, TableEnd string
	// Bind rewrites a query's ? placeholders as the driver takes them.
	Bind func(query string) string
	// Has returns the query that counts the tables or the indexes (typ,
	// "table" or "index") named name, and its arguments.
	Has func(typ, name string) (query string, args []any)
	// Columns counts the columns of a table (its first argument) with a
	// name (its second).
	Columns string
	// Index is the store's event-id index (eventindex.go).
	Index EventIndex
}

// DB is a store's database: the part of a store the two share.
type DB struct {
	// SQL is the database.
	SQL *sql.DB
	d   Dialect
	// ownership (owner.go): the epoch this service took, and the
	// liveness lock it holds
	epoch int64
	live  Lock
}

// Open pings db and migrates it with schema (Schema, and the database's
// own statements, in order), closing db if either fails; live is the
// store's liveness lock (owner.go).
func Open(ctx context.Context, db *sql.DB, d Dialect, live Lock, schema []string) (*DB, error) {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("service: cannot open the store: %w", err)
	}
	s := &DB{SQL: db, d: d, live: live}
	if err := s.migrate(ctx, schema); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Dialect returns the store's dialect.
func (s *DB) Dialect() Dialect { return s.d }

// Close lets go of the liveness lock and closes the database.
func (s *DB) Close() error {
	s.live.Release()
	return s.SQL.Close()
}

// Has reports whether the store has the index or table (typ) name.
func (s *DB) Has(ctx context.Context, tx *sql.Tx, typ, name string) (bool, error) {
	q, args := s.d.Has(typ, name)
	var n int
	err := tx.QueryRowContext(ctx, q, args...).Scan(&n)
	return n > 0, err
}

// ExecAll runs stmts in tx, in order.
func ExecAll(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// Schema returns the tables both stores have, and the owner row, in the
// dialect d: a migration's first statements.
func Schema(d Dialect) []string {
	// Tables keyed by their primary key. store.Event ids are unique per
	// experiment by the service's own rule, and the store's (the unique
	// event-id index, eventindex.go).
	real, blob, norowid := d.Real, d.Blob, d.TableEnd
	return []string{
		`CREATE TABLE IF NOT EXISTS experiments (
			id TEXT PRIMARY KEY, tenant TEXT NOT NULL, definition TEXT NOT NULL, created BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS events (
			exp TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL, unit_id TEXT NOT NULL,
			context TEXT, arm INTEGER NOT NULL, plan BIGINT NOT NULL, decided BIGINT NOT NULL,
			status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', reward ` + real + `, rseq BIGINT NOT NULL DEFAULT 0,
			at BIGINT NOT NULL DEFAULT 0, pscore ` + real + ` NOT NULL DEFAULT 1, policy_arm INTEGER NOT NULL DEFAULT -1,
			debit BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (exp, seq))` + norowid,
		`CREATE TABLE IF NOT EXISTS releases (
			exp TEXT NOT NULL, idx BIGINT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL,
			scale ` + real + ` NOT NULL, sensitivity ` + real + ` NOT NULL, value ` + real + ` NOT NULL,
			arm INTEGER NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (exp, idx))` + norowid,
		`CREATE TABLE IF NOT EXISTS draws (exp TEXT NOT NULL, idx BIGINT NOT NULL, word BIGINT NOT NULL, PRIMARY KEY (exp, idx))` + norowid,
		`CREATE TABLE IF NOT EXISTS ledger (
			unit_id TEXT NOT NULL, exp TEXT NOT NULL, rewards BIGINT NOT NULL, nano BIGINT NOT NULL,
			PRIMARY KEY (unit_id, exp))` + norowid,
		`CREATE TABLE IF NOT EXISTS snapshots (exp TEXT PRIMARY KEY, seq BIGINT NOT NULL, state ` + blob + ` NOT NULL, sum ` + blob + ` NOT NULL)` + norowid,
		// Each distinct shared part of the events' contexts once, by its
		// SHA-256 (store.Shared): a rank's action list.
		`CREATE TABLE IF NOT EXISTS action_sets (digest ` + blob + ` PRIMARY KEY, body TEXT NOT NULL)`,
		evaluationsTable,
		ownerTable,
		ownerRow,
	}
}

// migrate creates the tables of schema and adds what later versions
// added to stores that lack it, in one transaction.
func (s *DB) migrate(ctx context.Context, schema []string) error {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	defer tx.Rollback()
	if err := ExecAll(ctx, tx, schema...); err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	// The event-id index is built once the store is held (Own, Join):
	// see IndexEvents.
	// Columns added since the first version, to stores that lack them.
	for _, col := range []struct{ table, name, def string }{
		{"events", "pscore", s.d.Real + " NOT NULL DEFAULT 1"}, {"events", "policy_arm", "INTEGER NOT NULL DEFAULT -1"},
		{"events", "debit", "BIGINT NOT NULL DEFAULT 0"},
		{"experiments", "status", "TEXT NOT NULL DEFAULT '" + store.Active + "'"},
		// Rows written before folds (fold.go) were indexed and debited as
		// they were written: folded through every operation.
		{"events", "indexed", "INTEGER NOT NULL DEFAULT 1"},
		{"experiments", "folded", "BIGINT NOT NULL DEFAULT " + strconv.FormatInt(math.MaxInt64, 10)},
		// An event whose context's shared part is in action_sets: its
		// digest, and where it goes in the context (NULL: none).
		{"events", "shared", s.d.Blob}, {"events", "shared_at", "INTEGER"},
	} {
		var n int
		if err := tx.QueryRowContext(ctx, s.d.Columns, col.table, col.name).Scan(&n); err != nil {
			return fmt.Errorf("service: migrating the store: %w", err)
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+col.name+` `+col.def); err != nil {
				return fmt.Errorf("service: migrating the store: %w", err)
			}
		}
	}
	// Stores of earlier versions kept each reward's debit in a table of
	// their own (debits); it moves to the reward's event (events.debit),
	// which the reward's update writes anyway.
	debits, err := s.Has(ctx, tx, "table", "debits")
	if err == nil && debits {
		err = ExecAll(ctx, tx, `UPDATE events SET debit = (SELECT d.nano FROM debits d WHERE d.exp = events.exp AND d.seq = events.seq)
			WHERE EXISTS (SELECT 1 FROM debits d WHERE d.exp = events.exp AND d.seq = events.seq)`, `DROP TABLE debits`)
	}
	if err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	return nil
}
