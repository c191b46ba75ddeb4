package memstore

import (
	"context"
	"slices"

	"github.com/dpbandit/dpbandit/service/store"
)

// AddEvaluation stores a new evaluation unless the experiment's
// evaluations' spend plus its own would exceed limit (store.Evaluations).
func (s *Store) AddEvaluation(_ context.Context, e store.EvaluationRow, limit int64) (bool, error) {
	if err := s.enter("AddEvaluation"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	var spent int64
	for _, r := range s.evals[e.Exp] {
		if r.ID == e.ID {
			return false, store.ErrExists
		}
		spent += r.Nano
	}
	if spent+e.Nano > limit {
		return false, nil
	}
	if s.evals == nil {
		s.evals = map[string][]store.EvaluationRow{}
	}
	s.evals[e.Exp] = append(s.evals[e.Exp], e)
	return true, nil
}

// Evaluation returns an evaluation that is not deleted, or nil.
func (s *Store) Evaluation(_ context.Context, exp, id string) (*store.EvaluationRow, error) {
	if err := s.enter("Evaluation"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	for _, r := range s.evals[exp] {
		if r.ID == id && !r.Deleted {
			return &r, nil
		}
	}
	return nil, nil
}

// EvaluationList returns the evaluations that are not deleted, oldest
// first.
func (s *Store) EvaluationList(_ context.Context, exp string) ([]store.EvaluationRow, error) {
	if err := s.enter("EvaluationList"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.evals[exp]), func(r store.EvaluationRow) bool { return r.Deleted }), nil
}

// DeleteEvaluation drops an evaluation's result, keeping its spend.
func (s *Store) DeleteEvaluation(_ context.Context, exp, id string) (bool, error) {
	if err := s.enter("DeleteEvaluation"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for i, r := range s.evals[exp] {
		if r.ID == id {
			s.evals[exp][i].Result, s.evals[exp][i].Deleted = "", true
			return true, nil
		}
	}
	return false, nil
}

// EvaluationSpend returns what an experiment's evaluations spent.
func (s *Store) EvaluationSpend(_ context.Context, exp string) (int64, error) {
	if err := s.enter("EvaluationSpend"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var spent int64
	for _, r := range s.evals[exp] {
		spent += r.Nano
	}
	return spent, nil
}
