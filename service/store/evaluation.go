package store

import "context"

// Evaluations holds the Personalizer surface's evaluations of an
// experiment (engine/evaluation.go): each one's result, released once
// and stored, so that every read returns it as it was drawn, after a
// restart and from any replica. The rows are also the experiment's
// evaluation ledger: what every evaluation ever created spent, deleted
// ones included (a deletion drops the result, never the spend).
type Evaluations interface {
	// AddEvaluation stores a new evaluation in one transaction with the
	// check of the experiment's evaluation ledger: unless the spend of
	// its evaluations (deleted ones included) plus e.Nano stays within
	// limit nano-rho, nothing is stored and ok is false. An id taken is
	// ErrExists. A service that no longer owns the store (or a replica
	// the experiment's lease) gets ErrFenced and stores nothing.
	AddEvaluation(ctx context.Context, e EvaluationRow, limit int64) (ok bool, err error)
	// Evaluation returns an experiment's evaluation, nil if there is
	// none of that id or it was deleted.
	Evaluation(ctx context.Context, exp, id string) (*EvaluationRow, error)
	// EvaluationList returns an experiment's evaluations that are not
	// deleted, oldest first.
	EvaluationList(ctx context.Context, exp string) ([]EvaluationRow, error)
	// DeleteEvaluation drops an evaluation's result, keeping its spend
	// in the ledger; found is false if the experiment never had an
	// evaluation of that id (a deleted one is found).
	DeleteEvaluation(ctx context.Context, exp, id string) (found bool, err error)
	// EvaluationSpend returns the nano-rho that an experiment's
	// evaluations spent, deleted ones included.
	EvaluationSpend(ctx context.Context, exp string) (int64, error)
}

// EvaluationRow is an evaluation as stored.
type EvaluationRow struct {
	// Exp is the experiment's key ("tenant/id"); ID the evaluation's.
	Exp, ID string
	// Created is when it was created, unix nanoseconds.
	Created int64
	// Nano is what it spent from the experiment's evaluation ledger,
	// nano-rho.
	Nano int64
	// Result is the evaluation as the engine encoded it (JSON), its
	// releases included: read back as is, never computed again.
	Result string
	// Deleted marks a deleted evaluation (its Result is empty).
	Deleted bool
}
