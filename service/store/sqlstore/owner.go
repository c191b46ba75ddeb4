package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/dpbandit/dpbandit/service/store"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ownership of a store: one service writes it at a time.
//
// The owner row holds an epoch. A starting service takes the store in
// two steps before it loads anything:
//
//  1. Liveness: it waits until no other live service holds the store (a
//     session advisory lock on PostgreSQL, held on a connection of its
//     own; an flock on FILE.lock beside the SQLite FILE). Both are released by the
//     operating system or the database when the holder dies, so a
//     restarted service waits only for a dead one's connection to close.
//     A second service started beside a live one waits, logging which
//     service holds the store, and never half-starts.
//  2. Fencing: it increments the epoch (UPDATE owner ... RETURNING epoch)
//     and keeps the new value. Every later transaction of the service,
//     every group commit and every new experiment, checks inside the same
//     transaction that the epoch is still its own, and fails with
//     store.ErrFenced, changing nothing, if it is not.
//
// Why no interleaving of two owners can commit a stale change. Let A be
// the old owner (killed, paused or cut off, with a transaction still in
// flight) and B the new one, and let B's increment commit at time u.
//
//   - PostgreSQL. A's fence is its transaction's last statement: it
//     locks the owner row FOR SHARE where epoch = A's. If it runs before
//     B's UPDATE takes the row, A holds the share lock until A commits, so
//     B's UPDATE waits for A's commit, and B loads after u, from a
//     snapshot that contains A's change: nothing is stale. If it runs
//     after B's UPDATE took the row, it waits for B's transaction and,
//     under READ COMMITTED, re-reads the row's committed version, whose
//     epoch is B's: the fence raises (SQLSTATE DPB01) and A's whole
//     transaction rolls back. No other order exists: the row lock orders
//     the two. B's own writes that touch rows A's doomed transaction
//     holds wait for its rollback, so they never conflict with it.
//   - SQLite. Write transactions begin IMMEDIATE, so they hold the file's
//     single write lock from their first statement; the epoch is read
//     under it. A transaction that read A's epoch commits before B's
//     increment can start, and B loads after it; one that starts after u
//     reads B's epoch and aborts. A killed process cannot commit at all
//     (its transaction is rolled back by the next opener), so SQLite's
//     race is between live processes only, which the flock already
//     excludes; the epoch makes it safe even if the flock is bypassed.
//
// A service whose commit was fenced stops taking writes (fail-stop): its
// memory may be ahead of the store.

// fenceCode is the SQLSTATE the PostgreSQL fence raises.
const fenceCode = "DPB01"

// advisoryKey is the PostgreSQL advisory lock key of a store's owner (per
// database: "dpbandit" in ASCII).
const advisoryKey = 0x6470626e646974

// ownerTable is the owner row's schema; fenceFunction is PostgreSQL's
// fence, called as a pipelined statement, so that a stale epoch aborts
// the implicit transaction.
const (
	ownerTable = `CREATE TABLE IF NOT EXISTS owner (
		id INTEGER PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT NOT NULL, since BIGINT NOT NULL)`
	ownerRow      = `INSERT INTO owner (id, epoch, holder, since) VALUES (1, 0, '', 0) ON CONFLICT (id) DO NOTHING`
	fenceFunction = `CREATE OR REPLACE FUNCTION dpbandit_fence(e BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM owner WHERE id = 1 AND epoch = e FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'dpbandit: the store has an owner newer than epoch %', e USING ERRCODE = 'DPB01';
	END IF;
END $$`
	fenceCall = `SELECT dpbandit_fence($1)`
)

// Own makes the caller the store's only writer: it waits (calling
// waiting once, with the current holder) while another live service holds
// the store, then increments the owner epoch, fencing every transaction
// of earlier owners. holder describes the caller, for others' messages.
func (s *sqlStore) Own(ctx context.Context, holder string, waiting func(current string)) error {
	if s.epoch != 0 {
		return errors.New("service: the store is already owned by this service")
	}
	held, err := s.tryLive(ctx)
	if err != nil {
		return err
	}
	if !held {
		var cur string
		var since int64
		if err := s.db.QueryRowContext(ctx, `SELECT holder, since FROM owner WHERE id = 1`).Scan(&cur, &since); err != nil {
			return err
		}
		if since > 0 {
			cur += " since " + time.Unix(0, since).UTC().Format(time.RFC3339)
		}
		if waiting != nil {
			waiting(cur)
		}
		if err := s.waitLive(ctx); err != nil {
			return err
		}
	}
	if err := s.indexEvents(ctx, false); err != nil {
		return err
	}
	err = s.db.QueryRowContext(ctx, s.rebind(`UPDATE owner SET epoch = epoch + 1, holder = ?, since = ? WHERE id = 1 RETURNING epoch`),
		holder, time.Now().UnixNano()).Scan(&s.epoch)
	if err != nil {
		return fmt.Errorf("service: taking ownership of the store: %w", err)
	}
	if s.postgres {
		// The replicas' per-unit spend (lease.go) is not kept by a single
		// service, which reads the ledger: replicas started after it
		// rebuild it from the ledger.
		if _, err := s.db.ExecContext(ctx, `DELETE FROM unit_spend`); err != nil {
			return fmt.Errorf("service: taking ownership of the store: %w", err)
		}
	}
	return nil
}

// tryLive takes the liveness lock if it is free.
func (s *sqlStore) tryLive(ctx context.Context) (bool, error) {
	if s.postgres {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return false, err
		}
		var ok bool
		if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(advisoryKey)).Scan(&ok); err != nil || !ok {
			c.Close()
			return false, err
		}
		s.liveConn = c
		return true, nil
	}
	// A lock file of its own: closing a descriptor of the database file
	// itself would drop the process's POSIX locks on it, SQLite's own.
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		s.lockFile = f
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return false, nil
	default:
		f.Close()
		return false, fmt.Errorf("service: locking %s: %w", s.path, err)
	}
}

// waitLive waits for the liveness lock until ctx ends.
func (s *sqlStore) waitLive(ctx context.Context) error {
	if s.postgres {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(advisoryKey)); err != nil {
			c.Close()
			return err
		}
		s.liveConn = c
		return nil
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok, err := s.tryLive(ctx); ok || err != nil {
			return err
		}
	}
}

// release lets go of the liveness lock.
func (s *sqlStore) release() {
	if s.liveConn != nil {
		s.liveConn.Close()
		s.liveConn = nil
	}
	if s.lockFile != nil {
		s.lockFile.Close() // closing the descriptor drops the flock
		s.lockFile = nil
	}
}

// Owned returns store.ErrFenced once another service has taken the store.
func (s *sqlStore) Owned(ctx context.Context) error {
	if s.replica() {
		return nil // each experiment's lease is checked instead (lease.go)
	}
	var e int64
	if err := s.db.QueryRowContext(ctx, `SELECT epoch FROM owner WHERE id = 1`).Scan(&e); err != nil {
		return err
	}
	if e != s.epoch {
		return fmt.Errorf("%w (epoch %d, the store's is %d)", store.ErrFenced, s.epoch, e)
	}
	return nil
}

// fence checks, inside tx, that the caller still owns the store (SQLite,
// whose write transactions hold the write lock from their start).
func (s *sqlStore) fence(ctx context.Context, tx execQuerier) error {
	if s.epoch == 0 {
		return errors.New("service: the store is written before it is owned (Own)")
	}
	if s.postgres {
		_, err := tx.ExecContext(ctx, fenceCall, s.epoch)
		return fenced(err)
	}
	return s.fenceWith(tx.QueryRowContext(ctx, ownerEpoch))
}

// ownerEpoch reads the epoch of the store's owner (SQLite).
const ownerEpoch = `SELECT epoch FROM owner WHERE id = 1`

// fenceWith is fence on SQLite, given the row of ownerEpoch read in the
// transaction.
func (s *sqlStore) fenceWith(row *sql.Row) error {
	var e int64
	if err := row.Scan(&e); err != nil {
		return err
	}
	if e != s.epoch {
		return fmt.Errorf("%w (epoch %d, the store's is %d)", store.ErrFenced, s.epoch, e)
	}
	return nil
}

// execQuerier is a transaction, or a connection in one.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// whyFailed returns store.ErrFenced for a failed commit of a service that lost
// the store: on PostgreSQL the fence runs last, so a stale transaction
// may first fail on a row its successor wrote (a duplicate key).
func (s *sqlStore) whyFailed(ctx context.Context, err error) error {
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
