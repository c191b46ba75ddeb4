package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
)

// Ownership of a SQLite store (the protocol: service/store/internal/sqldb/owner.go).
//
// Why no interleaving of two owners can commit a stale change. Let A be
// the old owner (killed, paused or cut off, with a transaction still in
// flight) and B the new one, and let B's increment commit at time u.
// Write transactions begin IMMEDIATE, so they hold the file's single
// write lock from their first statement; the epoch is read under it. A
// transaction that read A's epoch commits before B's increment can
// start, and B loads after it; one that starts after u reads B's epoch
// and aborts. A killed process cannot commit at all (its transaction is
// rolled back by the next opener), so SQLite's race is between live
// processes only, which the flock already excludes; the epoch makes it
// safe even if the flock is bypassed.

// flock is a SQLite store's liveness lock: an flock on FILE.lock beside
// the SQLite FILE.
type flock struct {
	path string // the SQLite file, canonical (canonicalPath)
	file *os.File
}

// Try takes the liveness lock if it is free.
func (l *flock) Try(context.Context) (bool, error) {
	// A lock file of its own: closing a descriptor of the database file
	// itself would drop the process's POSIX locks on it, SQLite's own.
	f, err := os.OpenFile(l.path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		l.file = f
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return false, nil
	default:
		f.Close()
		return false, fmt.Errorf("service: locking %s: %w", l.path, err)
	}
}

// Wait waits for the liveness lock until ctx ends.
func (l *flock) Wait(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok, err := l.Try(ctx); ok || err != nil {
			return err
		}
	}
}

// Release lets go of the liveness lock.
func (l *flock) Release() {
	if l.file != nil {
		l.file.Close() // closing the descriptor drops the flock
		l.file = nil
	}
}

// fence checks, inside tx, that the caller still owns the store (write
// transactions hold the write lock from their start).
func (s *Store) fence(ctx context.Context, tx *sql.Tx) error {
	if _, err := s.Writer(); err != nil {
		return err
	}
	return s.CheckEpoch(tx.QueryRowContext(ctx, sqldb.OwnerEpoch))
}
