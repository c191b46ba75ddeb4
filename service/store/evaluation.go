package store

import "context"

// Evaluations holds the Personalizer surface's evaluations of an
// experiment (package service/evaluation): each one's result, released once
// and stored, so that every read returns it as it was drawn, after a
// restart and from any replica. The rows are also the experiment's
// evaluation ledger: what every evaluation ever created spent, deleted
// ones included (a deletion drops the result, never the spend).
type Evaluations interface {
	// AddEvaluation stores a new evaluation in one transaction with the
	// check of the experiment's evaluation ledger: unless the spend of
	// its evaluations (deleted ones included) plus e.Nano stays within
	// limit nano-rho, nothing is stored and ok is false. In the same
	// transaction every unit of e.Units is debited e.Nano in its ledger
	// row of EvaluationLedger(e.Exp) (and, with e.Unreserved, in its
	// spend row, as a commit's unreserved fold adds them): the
	// evaluation and its units' debits are stored together or not at
	// all. An id taken is ErrExists. A service that no longer owns the
	// store (or a replica the experiment's lease) gets ErrFenced and
	// stores nothing.
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
	// Units are the units whose events the evaluation read, each
	// debited Nano in the ledger (AddEvaluation); Unreserved adds the
	// debits to the units' spend rows too (store.Fold.Unreserved: a
	// replica without a cap). Written only: reads leave them empty.
	Units      []string
	Unreserved bool
}

// EvaluationLedger is the experiment key under which the ledger holds
// what an experiment's evaluations debited its units: "tenant/id"
// followed by "#evaluations", a row of its own beside the experiment's
// (whose rewards and debits stay those of its events), counted in the
// unit's total over its tenant's experiments (the key starts with
// "tenant/") and never an experiment's key ('#' is not in ids).
func EvaluationLedger(exp string) string { return exp + "#evaluations" }
