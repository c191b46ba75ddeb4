package sqldb

import (
	"context"
	"database/sql"

	"github.com/dpbandit/dpbandit/service/store"
)

// evaluationsTable holds the Personalizer surface's evaluations
// (store.Evaluations): one row per evaluation ever created, its result
// (JSON) emptied and deleted set once it is deleted, its spend (nano)
// kept: the experiment's evaluation ledger is the sum of its rows.
const evaluationsTable = `CREATE TABLE IF NOT EXISTS evaluations (
	exp TEXT NOT NULL, id TEXT NOT NULL, created BIGINT NOT NULL, nano BIGINT NOT NULL,
	result TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (exp, id))`

// AddEvaluation is store.Evaluations' AddEvaluation: in one transaction,
// it locks the experiment's row (PostgreSQL: concurrent additions wait
// for one another; SQLite's write transactions are one at a time
// anyway), sums its evaluations' spend, and inserts the row if the sum
// plus its own stays within limit; fence checks the writer's ownership
// (or lease) in the same transaction before it commits.
func (s *DB) AddEvaluation(ctx context.Context, e store.EvaluationRow, limit int64, fence func(*sql.Tx) error) (bool, error) {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.d.Bind(`UPDATE experiments SET id = id WHERE id = ?`), e.Exp); err != nil {
		return false, err
	}
	var spent int64
	if err := tx.QueryRowContext(ctx, s.d.Bind(`SELECT COALESCE(SUM(nano), 0) FROM evaluations WHERE exp = ?`), e.Exp).Scan(&spent); err != nil {
		return false, err
	}
	if spent+e.Nano > limit {
		return false, nil
	}
	res, err := tx.ExecContext(ctx, s.d.Bind(`INSERT INTO evaluations (exp, id, created, nano, result) VALUES (?, ?, ?, ?, ?) ON CONFLICT (exp, id) DO NOTHING`),
		e.Exp, e.ID, e.Created, e.Nano, e.Result)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, store.ErrExists
	}
	if err := fence(tx); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// evaluationCols are the columns scanEvaluation reads.
const evaluationCols = `exp, id, created, nano, result, deleted`

func scanEvaluation(rows *sql.Rows) (store.EvaluationRow, error) {
	var e store.EvaluationRow
	var deleted int
	err := rows.Scan(&e.Exp, &e.ID, &e.Created, &e.Nano, &e.Result, &deleted)
	e.Deleted = deleted != 0
	return e, err
}

// Evaluation is store.Evaluations' Evaluation.
func (s *DB) Evaluation(ctx context.Context, exp, id string) (*store.EvaluationRow, error) {
	var out *store.EvaluationRow
	err := s.Each(ctx, `SELECT `+evaluationCols+` FROM evaluations WHERE exp = ? AND id = ? AND deleted = 0`, []any{exp, id}, func(rows *sql.Rows) error {
		e, err := scanEvaluation(rows)
		out = &e
		return err
	})
	return out, err
}

// EvaluationList is store.Evaluations' EvaluationList.
func (s *DB) EvaluationList(ctx context.Context, exp string) ([]store.EvaluationRow, error) {
	var out []store.EvaluationRow
	err := s.Each(ctx, `SELECT `+evaluationCols+` FROM evaluations WHERE exp = ? AND deleted = 0 ORDER BY created, id`, []any{exp}, func(rows *sql.Rows) error {
		e, err := scanEvaluation(rows)
		out = append(out, e)
		return err
	})
	return out, err
}

// EvaluationSpend is store.Evaluations' EvaluationSpend.
func (s *DB) EvaluationSpend(ctx context.Context, exp string) (int64, error) {
	var spent int64
	err := s.SQL.QueryRowContext(ctx, s.d.Bind(`SELECT COALESCE(SUM(nano), 0) FROM evaluations WHERE exp = ?`), exp).Scan(&spent)
	return spent, err
}

// DeleteEvaluation is store.Evaluations' DeleteEvaluation, its
// transaction checked by fence as AddEvaluation's.
func (s *DB) DeleteEvaluation(ctx context.Context, exp, id string, fence func(*sql.Tx) error) (bool, error) {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.Bind(`UPDATE evaluations SET result = '', deleted = 1 WHERE exp = ? AND id = ?`), exp, id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if err := fence(tx); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
