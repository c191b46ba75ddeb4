package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
)

// eventIndex is PostgreSQL's event-id index (sqldb.EventIndex): on every
// event, as it is written.
var eventIndex = sqldb.EventIndex{
	Name: "events_id_exp", On: "events_id_exp ON events (event_id, exp)",
	Old: []string{"events_id_exp_folded", "events_by_id", "events_by_event_id"},
}

// indexConcurrently is sqldb.DB.IndexEvents beside live replicas: live
// replicas share the store, and the index is then built and the old ones
// dropped CONCURRENTLY, which blocks none of their reads and writes (one
// replica at a time, under an advisory lock; an index left invalid by an
// interrupted build is built again).
func (s *Store) indexConcurrently(ctx context.Context) error {
	return sqldb.IndexError(s.indexEventsConcurrently(ctx))
}

// indexEventsConcurrently is indexConcurrently's work, on a connection
// of its own.
func (s *Store) indexEventsConcurrently(ctx context.Context) error {
	conn, err := s.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryKey+2)); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(advisoryKey+2))
	ix := eventIndex
	var valid sql.NullBool // NULL: no index
	err = conn.QueryRowContext(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, ix.Name).Scan(&valid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var stmts []string
	if valid.Valid && !valid.Bool {
		stmts = append(stmts, `DROP INDEX CONCURRENTLY `+ix.Name)
	}
	if !valid.Bool {
		stmts = append(stmts, `CREATE UNIQUE INDEX CONCURRENTLY `+ix.On)
	}
	for _, old := range ix.Old {
		stmts = append(stmts, `DROP INDEX CONCURRENTLY IF EXISTS `+old)
	}
	for _, st := range stmts {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}
