package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dpbandit/dpbandit/service/store"
)

// Each runs a query (? placeholders, rewritten by the dialect) and calls
// scan on every row.
func (s *DB) Each(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.SQL.QueryContext(ctx, s.d.Bind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Experiments returns every experiment's row, oldest first.
func (s *DB) Experiments(ctx context.Context) ([]store.Experiment, error) {
	var out []store.Experiment
	err := s.Each(ctx, `SELECT `+ExperimentCols+` FROM experiments ORDER BY created, id`, nil, func(rows *sql.Rows) error {
		d, err := ScanExperiment(rows)
		out = append(out, d)
		return err
	})
	return out, err
}

// ExperimentCols are the columns ScanExperiment reads.
const ExperimentCols = `id, tenant, definition, created, status, folded`

// ScanExperiment reads a row of ExperimentCols.
func ScanExperiment(rows *sql.Rows) (store.Experiment, error) {
	var e store.Experiment
	err := rows.Scan(&e.Key, &e.Tenant, &e.Definition, &e.Created, &e.Status, &e.Folded)
	return e, err
}

// eventCols are the columns scanEvent reads.
// (the context's shared part, store.Shared, joined from action_sets).
const eventCols = `seq, event_id, unit_id, COALESCE(context, ''), arm, plan, decided, status, reason, reward, rseq, at, pscore, policy_arm, debit,
	shared_at, (SELECT a.body FROM action_sets a WHERE a.digest = events.shared)`

// scanEvent reads a row of eventCols.
func scanEvent(rows *sql.Rows) (store.Event, error) {
	var e store.Event
	var r sql.NullFloat64
	var at sql.NullInt64
	var part sql.NullString
	err := rows.Scan(&e.Seq, &e.ID, &e.Unit, &e.Context, &e.Arm, &e.Plan, &e.Decided, &e.Status, &e.Reason, &r, &e.RSeq, &e.At, &e.PScore, &e.PolicyArm, &e.Debit,
		&at, &part)
	if r.Valid {
		e.Reward = &r.Float64
	}
	if err == nil && at.Valid {
		if !part.Valid {
			return e, fmt.Errorf("service: event %d refers to a shared part of its context that the store lacks", e.Seq)
		}
		e.Context, err = store.Join(e.Context, int(at.Int64), part.String)
	}
	return e, err
}

// History returns an experiment's events, releases and draws after the
// mark from.
func (s *DB) History(ctx context.Context, id string, from store.Mark) (*store.History, error) {
	h := &store.History{}
	scan := func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		h.Events = append(h.Events, e)
		return err
	}
	// The pending events of the mark, by their primary key, a few at a
	// time; then those decided after it.
	for ps := from.Pending; len(ps) > 0; {
		n := min(len(ps), 256)
		args := []any{id}
		for _, p := range ps[:n] {
			args = append(args, p)
		}
		q := `SELECT ` + eventCols + ` FROM events WHERE exp = ? AND seq IN (?` + strings.Repeat(", ?", n-1) + `) ORDER BY seq`
		if err := s.Each(ctx, q, args, scan); err != nil {
			return nil, err
		}
		ps = ps[n:]
	}
	if err := s.Each(ctx, `SELECT `+eventCols+` FROM events WHERE exp = ? AND seq > ? ORDER BY seq`, []any{id, from.Seq}, scan); err != nil {
		return nil, err
	}
	err := s.Each(ctx, `SELECT seq, kind, scale, sensitivity, value, arm, at FROM releases WHERE exp = ? AND idx >= ? ORDER BY idx`, []any{id, from.Releases}, func(rows *sql.Rows) error {
		var r store.Release
		err := rows.Scan(&r.Seq, &r.Kind, &r.Scale, &r.Sensitivity, &r.Value, &r.Arm, &r.At)
		h.Releases = append(h.Releases, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = s.Each(ctx, `SELECT word FROM draws WHERE exp = ? AND idx >= ? ORDER BY idx`, []any{id, from.Draws}, func(rows *sql.Rows) error {
		var w int64
		err := rows.Scan(&w)
		h.Draws = append(h.Draws, uint64(w))
		return err
	})
	return h, err
}

// Snapshot returns an experiment's snapshot, or nil without one.
func (s *DB) Snapshot(ctx context.Context, id string) (*store.Snapshot, error) {
	var out *store.Snapshot
	err := s.Each(ctx, `SELECT seq, state, sum FROM snapshots WHERE exp = ?`, []any{id}, func(rows *sql.Rows) error {
		out = &store.Snapshot{}
		return rows.Scan(&out.Seq, &out.State, &out.Sum)
	})
	return out, err
}

// The reads on the request path (TestLookupsUseTheirKeys,
// TestPostgresPlansUseTheirKeys: each finds its rows by an index on
// every column it matches).
const (
	// QueryEvent finds an event by its id; the event-id index's Filter
	// ends it.
	QueryEvent = `SELECT ` + eventCols + ` FROM events WHERE exp = ? AND event_id = ?`
	// QueryLedger reads a unit's ledger rows of a tenant.
	QueryLedger = `SELECT exp, rewards, nano FROM ledger WHERE unit_id = ? AND substr(exp, 1, ?) = ? ORDER BY exp`
	// QueryUnitRewards reads a unit's rewards in an experiment.
	QueryUnitRewards = `SELECT rewards FROM ledger WHERE unit_id = ? AND exp = ?`
	// QueryUnitTotal sums a unit's debits in a tenant's experiments.
	QueryUnitTotal = `SELECT COALESCE(SUM(nano), 0) FROM ledger WHERE unit_id = ? AND substr(exp, 1, ?) = ?`
)

// Ledger returns a unit's ledger rows in a tenant's experiments.
func (s *DB) Ledger(ctx context.Context, tenant, unit string) ([]store.LedgerRow, error) {
	var out []store.LedgerRow
	// The tenant's keys start with "tenant/": an equality, which every
	// deterministic collation decides byte for byte (a range such as
	// exp >= 'a/' AND exp < 'a0' would, under a language-aware collation,
	// take tenant "A"'s keys too). Tenant names are ASCII.
	prefix := tenant + "/"
	err := s.Each(ctx, QueryLedger, []any{unit, len(prefix), prefix}, func(rows *sql.Rows) error {
		r := store.LedgerRow{Unit: unit}
		err := rows.Scan(&r.Experiment, &r.Rewards, &r.NanoRho)
		out = append(out, r)
		return err
	})
	return out, err
}

// UnitRewards returns a unit's rewards in an experiment.
func (s *DB) UnitRewards(ctx context.Context, id, unit string) (int64, error) {
	var n int64
	err := s.Each(ctx, QueryUnitRewards, []any{unit, id}, func(rows *sql.Rows) error { return rows.Scan(&n) })
	return n, err
}

// UnitTotal returns a unit's debits in a tenant's experiments.
func (s *DB) UnitTotal(ctx context.Context, tenant, unit string) (int64, error) {
	var n int64
	prefix := tenant + "/" // as in Ledger
	err := s.Each(ctx, QueryUnitTotal, []any{unit, len(prefix), prefix},
		func(rows *sql.Rows) error { return rows.Scan(&n) })
	return n, err
}

// UnitStats returns the number of an experiment's units and the most
// rewards of one.
func (s *DB) UnitStats(ctx context.Context, id string) (units, most int64, err error) {
	err = s.Each(ctx, `SELECT COUNT(*), COALESCE(MAX(rewards), 0) FROM ledger WHERE exp = ?`, []any{id}, func(rows *sql.Rows) error { return rows.Scan(&units, &most) })
	return units, most, err
}

// LedgerUnits calls fn for every ledger row's unit and experiment.
func (s *DB) LedgerUnits(ctx context.Context, fn func(store.UnitKey, string)) error {
	return s.Each(ctx, `SELECT unit_id, exp FROM ledger`, nil, func(rows *sql.Rows) error {
		var u, exp string
		err := rows.Scan(&u, &exp)
		tenant, _, _ := strings.Cut(exp, "/")
		fn(store.UnitKey{Tenant: tenant, Unit: u}, exp)
		return err
	})
}

// Event finds an event by its id in the event-id index, or returns nil.
func (s *DB) Event(ctx context.Context, exp, eventID string) (*store.Event, error) {
	var out *store.Event
	err := s.Each(ctx, QueryEvent+s.d.Index.Filter, []any{exp, eventID}, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		out = &e
		return err
	})
	return out, err
}

// EventIDs calls fn with the id of every event of an experiment up to
// seq upTo.
func (s *DB) EventIDs(ctx context.Context, id string, upTo int64, fn func(string)) error {
	return s.Each(ctx, `SELECT event_id FROM events WHERE exp = ? AND seq <= ?`, []any{id, upTo}, func(rows *sql.Rows) error {
		var e string
		err := rows.Scan(&e)
		fn(e)
		return err
	})
}

// Log calls fn with every event of an experiment that is not pending,
// in order.
func (s *DB) Log(ctx context.Context, id string, fn func(store.Event) error) error {
	return s.Each(ctx, `SELECT `+eventCols+` FROM events WHERE exp = ? AND status <> ? ORDER BY seq`, []any{id, store.Pending}, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		return fn(e)
	})
}
