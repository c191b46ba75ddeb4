package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Transactions PostgreSQL aborted. A deadlock (SQLSTATE 40P01) or a
// serialisation failure (40001) rolls the victim's whole transaction
// back: nothing of it was committed, so it is run again rather than
// taken for a store failure (which stops a service's writes). The
// service locks the rows it shares between transactions in one order
// (lease rows and units' spend rows by key: lease.go, sqldb.Writes),
// so that its own transactions do not deadlock; the retry covers what
// no order rules out (a transaction of an operator's, or of another
// version during a rolling update).

// maxAttempts bounds the runs of a transaction aborted again and again:
// the last abort is returned, as a store failure.
const maxAttempts = 5

// SQLSTATEs of aborted transactions.
const (
	sqlstateSerialization = "40001"
	sqlstateDeadlock      = "40P01"
)

// abortedTx reports whether err is PostgreSQL's abort of a transaction
// for a deadlock or a serialisation failure (by its SQLSTATE, never its
// text).
func abortedTx(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == sqlstateDeadlock || pe.Code == sqlstateSerialization)
}

// retryAborted runs f, a whole transaction, until it does not end in an
// abort (abortedTx), at most maxAttempts times, pausing a few random
// milliseconds more each time so that the transactions that collided do
// not collide again; it counts the aborts in s.aborted.
func (s *Store) retryAborted(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if !abortedTx(err) || attempt == maxAttempts {
			return err
		}
		s.aborted.Add(1)
		t := time.NewTimer(rand.N(time.Duration(attempt) * 10 * time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
