package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/dpbandit/dpbandit/service/store"
)

// Ownership of a store: one service writes it at a time.
//
// The owner row holds an epoch. A starting service takes the store in
// two steps before it loads anything:
//
//  1. Liveness: it waits until no other live service holds the store (a
//     session advisory lock on PostgreSQL, held on a connection of its
//     own; an flock on FILE.lock beside the SQLite FILE: the store's
//     Lock). Both are released by the operating system or the database
//     when the holder dies, so a restarted service waits only for a dead
//     one's connection to close. A second service started beside a live
//     one waits, logging which service holds the store, and never
//     half-starts.
//  2. Fencing: it increments the epoch (UPDATE owner ... RETURNING epoch)
//     and keeps the new value. Every later transaction of the service,
//     every group commit and every new experiment, checks inside the same
//     transaction that the epoch is still its own, and fails with
//     store.ErrFenced, changing nothing, if it is not.
//
// Why no interleaving of two owners can commit a stale change is argued
// for each database beside its fence (service/store/postgres/owner.go,
// service/store/sqlite/owner.go).
//
// A service whose commit was fenced stops taking writes (fail-stop): its
// memory may be ahead of the store.

// ownerTable is the owner row's schema.
const (
	ownerTable = `CREATE TABLE IF NOT EXISTS owner (
		id INTEGER PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT NOT NULL, since BIGINT NOT NULL)`
	ownerRow = `INSERT INTO owner (id, epoch, holder, since) VALUES (1, 0, '', 0) ON CONFLICT (id) DO NOTHING`
)

// OwnerEpoch reads the epoch of the store's owner.
const OwnerEpoch = `SELECT epoch FROM owner WHERE id = 1`

// ErrNotOwned is the error of a write before the store is owned (Own).
var ErrNotOwned = errors.New("service: the store is written before it is owned (Own)")

// Lock is a store's liveness lock (step 1 above).
type Lock interface {
	// Try takes the lock if it is free.
	Try(ctx context.Context) (bool, error)
	// Wait waits for the lock until ctx ends.
	Wait(ctx context.Context) error
	// Release lets go of the lock, if held.
	Release()
}

// Epoch returns the owner epoch this service took (0: not owned).
func (s *DB) Epoch() int64 { return s.epoch }

// Writer returns the owner epoch this service took, or ErrNotOwned
// before it owns the store.
func (s *DB) Writer() (int64, error) {
	if s.epoch == 0 {
		return 0, ErrNotOwned
	}
	return s.epoch, nil
}

// Own makes the caller the store's only writer: it waits (calling
// waiting once, with the current holder) while another live service holds
// the store, then increments the owner epoch, fencing every transaction
// of earlier owners. holder describes the caller, for others' messages.
func (s *DB) Own(ctx context.Context, holder string, waiting func(current string)) error {
	if s.epoch != 0 {
		return errors.New("service: the store is already owned by this service")
	}
	held, err := s.live.Try(ctx)
	if err != nil {
		return err
	}
	if !held {
		var cur string
		var since int64
		if err := s.SQL.QueryRowContext(ctx, `SELECT holder, since FROM owner WHERE id = 1`).Scan(&cur, &since); err != nil {
			return err
		}
		if since > 0 {
			cur += " since " + time.Unix(0, since).UTC().Format(time.RFC3339)
		}
		if waiting != nil {
			waiting(cur)
		}
		if err := s.live.Wait(ctx); err != nil {
			return err
		}
	}
	if err := s.IndexEvents(ctx); err != nil {
		return err
	}
	err = s.SQL.QueryRowContext(ctx, s.d.Bind(`UPDATE owner SET epoch = epoch + 1, holder = ?, since = ? WHERE id = 1 RETURNING epoch`),
		holder, time.Now().UnixNano()).Scan(&s.epoch)
	if err != nil {
		return fmt.Errorf("service: taking ownership of the store: %w", err)
	}
	return nil
}

// Owned returns store.ErrFenced once another service has taken the store.
func (s *DB) Owned(ctx context.Context) error {
	return s.CheckEpoch(s.SQL.QueryRowContext(ctx, OwnerEpoch))
}

// CheckEpoch returns store.ErrFenced unless row, of OwnerEpoch, holds this
// service's epoch.
func (s *DB) CheckEpoch(row *sql.Row) error {
	var e int64
	if err := row.Scan(&e); err != nil {
		return err
	}
	return s.CheckEpochIs(e)
}

// CheckEpochIs returns store.ErrFenced unless e, the store's owner epoch
// read under the write lock, is this service's.
func (s *DB) CheckEpochIs(e int64) error {
	if e != s.epoch {
		return fmt.Errorf("%w (epoch %d, the store's is %d)", store.ErrFenced, s.epoch, e)
	}
	return nil
}

// Create is store.Registry's CreateExperiment: it stores a new
// experiment's row, with its fold cursor folded, in a transaction that
// fence checks (and may add to) before it commits; then, if fence
// returns it, runs once it has committed.
func (s *DB) Create(ctx context.Context, e store.Experiment, folded int64, fence func(*sql.Tx) (then func(), err error)) error {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.Bind(`INSERT INTO experiments (id, tenant, definition, created, folded) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		e.Key, e.Tenant, e.Definition, e.Created, folded)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrExists
	}
	then, err := fence(tx)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if then != nil {
		then()
	}
	return nil
}
