package sqlite

import (
	"context"
	"database/sql"

	"github.com/dpbandit/dpbandit/service/store"
)

// AddEvaluation stores a new evaluation within the experiment's
// evaluation ledger's limit, fenced as a commit is (owner.go).
func (s *Store) AddEvaluation(ctx context.Context, e store.EvaluationRow, limit int64) (bool, error) {
	return s.DB.AddEvaluation(ctx, e, limit, func(tx *sql.Tx) error { return s.fence(ctx, tx) })
}

// DeleteEvaluation drops an evaluation's result, keeping its spend,
// fenced as a commit is.
func (s *Store) DeleteEvaluation(ctx context.Context, exp, id string) (bool, error) {
	return s.DB.DeleteEvaluation(ctx, exp, id, func(tx *sql.Tx) error { return s.fence(ctx, tx) })
}
