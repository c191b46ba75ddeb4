package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/service/store"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ownership of a PostgreSQL store (the protocol: service/store/internal/sqldb/owner.go).
//
// Why no interleaving of two owners can commit a stale change. Let A be
// the old owner (killed, paused or cut off, with a transaction still in
// flight) and B the new one, and let B's increment commit at time u.
// A's fence is its transaction's last statement: it locks the owner row
// FOR SHARE where epoch = A's. If it runs before B's UPDATE takes the
// row, A holds the share lock until A commits, so B's UPDATE waits for
// A's commit, and B loads after u, from a snapshot that contains A's
// change: nothing is stale. If it runs after B's UPDATE took the row, it
// waits for B's transaction and, under READ COMMITTED, re-reads the
// row's committed version, whose epoch is B's: the fence raises
// (SQLSTATE DPB01) and A's whole transaction rolls back. No other order
// exists: the row lock orders the two. B's own writes that touch rows
// A's doomed transaction holds wait for its rollback, so they never
// conflict with it.

// fenceCode is the SQLSTATE the PostgreSQL fence raises.
const fenceCode = "DPB01"

// advisoryKey is the PostgreSQL advisory lock key of a store's owner (per
// database: "dpbandit" in ASCII).
const advisoryKey = 0x6470626e646974

// fenceFunction is PostgreSQL's fence, called as a pipelined statement,
// so that a stale epoch aborts the implicit transaction.
const (
	fenceFunction = `CREATE OR REPLACE FUNCTION dpbandit_fence(e BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM owner WHERE id = 1 AND epoch = e FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'dpbandit: the store has an owner newer than epoch %', e USING ERRCODE = 'DPB01';
	END IF;
END $$`
	fenceCall = `SELECT dpbandit_fence($1)`
)

// advisory is a PostgreSQL store's liveness lock: a session advisory
// lock, held on a connection of its own.
type advisory struct {
	db   *sql.DB
	conn *sql.Conn
}

// Try takes the liveness lock if it is free.
func (l *advisory) Try(ctx context.Context) (bool, error) {
	c, err := l.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(advisoryKey)).Scan(&ok); err != nil || !ok {
		c.Close()
		return false, err
	}
	l.conn = c
	return true, nil
}

// Wait waits for the liveness lock until ctx ends.
func (l *advisory) Wait(ctx context.Context) error {
	c, err := l.db.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryKey)); err != nil {
		c.Close()
		return err
	}
	l.conn = c
	return nil
}

// Release lets go of the liveness lock.
func (l *advisory) Release() {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}

// Own makes the caller the store's only writer (sqldb.DB.Own).
func (s *Store) Own(ctx context.Context, holder string, waiting func(current string)) error {
	if err := s.DB.Own(ctx, holder, waiting); err != nil {
		return err
	}
	// The replicas' per-unit spend (lease.go) is not kept by a single
	// service, which reads the ledger: replicas started after it
	// rebuild it from the ledger.
	if _, err := s.SQL.ExecContext(ctx, `DELETE FROM unit_spend`); err != nil {
		return fmt.Errorf("service: taking ownership of the store: %w", err)
	}
	return nil
}

// Owned returns store.ErrFenced once another service has taken the store.
func (s *Store) Owned(ctx context.Context) error {
	if s.replica() {
		return nil // each experiment's lease is checked instead (lease.go)
	}
	return s.DB.Owned(ctx)
}

// fence checks, inside tx, that the caller still owns the store.
func (s *Store) fence(ctx context.Context, tx *sql.Tx) error {
	epoch, err := s.Writer()
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, fenceCall, epoch)
	return fenced(err)
}

// whyFailed returns store.ErrFenced for a failed commit of a service that lost
// the store: the fence runs last, so a stale transaction may first fail
// on a row its successor wrote (a duplicate key).
func (s *Store) whyFailed(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, store.ErrFenced) {
		return err
	}
	if oerr := s.Owned(ctx); errors.Is(oerr, store.ErrFenced) {
		return fmt.Errorf("%w; the commit failed: %v", oerr, err)
	}
	return err
}

// fenced returns store.ErrFenced for PostgreSQL's fence error, err otherwise.
func fenced(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == fenceCode {
		return fmt.Errorf("%w (%s)", store.ErrFenced, pe.Message)
	}
	return err
}
