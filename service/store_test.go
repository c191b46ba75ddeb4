package service

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// debited returns the sum of the debits stored on a unit's events in an
// experiment (the ledger's audit trail; q rebinds placeholders).
func debited(t *testing.T, db *sql.DB, q func(string) string, exp, unit string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q(`SELECT COALESCE(SUM(debit), 0) FROM events WHERE exp = ? AND unit_id = ?`), exp, unit).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLookupsUseTheirKeys: the store's reads on the request path find
// their rows through an index on every column they match, in SQLite's own
// query plans: a lookup that matched only the experiment would read all of
// its history (a retried event id once its event left memory, a unit's
// ledger), in time that grows with the experiment, holding its lock.
func TestLookupsUseTheirKeys(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := st.(*sqlStore).db
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string // a plan step for each table read
	}{
		{"event by id", queryEvent, []any{"e", "id"}, []string{"events USING INDEX events_by_event_id (exp=? AND event_id=?)"}},
		{"unit's ledger", queryLedger, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"unit's rewards", queryUnitRewards, []any{"u", "e"}, []string{"ledger USING PRIMARY KEY (unit_id=? AND exp=?)"}},
		{"unit's total", queryUnitTotal, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
	} {
		plan := queryPlan(t, db, c.query, c.args)
		for _, w := range c.want {
			if !strings.Contains(plan, "SEARCH "+w) {
				t.Errorf("%s: plan\n%s\nhas no SEARCH %s", c.name, plan, w)
			}
		}
		if strings.Contains(plan, "SCAN ") {
			t.Errorf("%s: plan\n%s\nscans a table", c.name, plan)
		}
	}
}

// queryPlan returns SQLite's plan for query, a step a line.
func queryPlan(t *testing.T, db *sql.DB, query string, args []any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var step string
		if err := rows.Scan(&id, &parent, &unused, &step); err != nil {
			t.Fatal(err)
		}
		b.WriteString(step + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
