package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/dpbandit/dpbandit/service/store"
)

// AddEvaluation stores a new evaluation within the experiment's
// evaluation ledger's limit, fenced as a commit is: by the owner's
// epoch, or on a replica by the experiment's lease.
func (s *Store) AddEvaluation(ctx context.Context, e store.EvaluationRow, limit int64) (bool, error) {
	return s.DB.AddEvaluation(ctx, e, limit, func(tx *sql.Tx) error { return s.fenceExp(ctx, tx, e.Exp) })
}

// DeleteEvaluation drops an evaluation's result, keeping its spend,
// fenced as AddEvaluation.
func (s *Store) DeleteEvaluation(ctx context.Context, exp, id string) (bool, error) {
	return s.DB.DeleteEvaluation(ctx, exp, id, func(tx *sql.Tx) error { return s.fenceExp(ctx, tx, exp) })
}

// fenceExp checks, in tx, that this service may write experiment exp:
// it owns the store, or, as a replica, holds exp's lease (its fence
// locks the lease row until tx ends, as a commit's does).
func (s *Store) fenceExp(ctx context.Context, tx *sql.Tx, exp string) error {
	if !s.replica() {
		return s.fence(ctx, tx)
	}
	e := s.epochOf(exp)
	if e == 0 {
		return fmt.Errorf("%w (experiment %s: this replica holds no lease on it)", store.ErrFenced, exp)
	}
	_, err := tx.ExecContext(ctx, leaseFenceCall, exp, e)
	return fenced(err)
}
