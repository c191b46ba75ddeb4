package service

import (
	"context"
	"database/sql"
	"fmt"
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
		{"event by id", queryEvent, []any{"e", "id"}, []string{"events USING INDEX events_id_exp (event_id=? AND exp=?)"}},
		{"unit's ledger", queryLedger, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"unit's rewards", queryUnitRewards, []any{"u", "e"}, []string{"ledger USING PRIMARY KEY (unit_id=? AND exp=?)"}},
		{"unit's total", queryUnitTotal, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"a reward", queries[stmtUpdateEvent], []any{"s", "", 1, 1, 1, 0, "e", 1}, []string{"events USING PRIMARY KEY (exp=? AND seq=?)"}},
		{"a forgotten reward", queries[stmtForget], []any{"e", 1}, []string{"events USING PRIMARY KEY (exp=? AND seq=?)"}},
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

// TestPostgresPlansUseTheirKeys: on a new PostgreSQL store, before any
// statistics, the generic plans of the statements that find an event
// (which pgx's prepared statements switch to after five runs) search
// the index of every column they match. The event-id index once began
// with the experiment, and the updates by (exp, seq) took its experiment
// prefix: each read the experiment's whole history (124 million index
// entries for 19 000 updates; 570 pairs a second instead of thousands).
func TestPostgresPlansUseTheirKeys(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name, query, args, want string
		filter                  bool // a filter on the index's rows is expected
	}{
		{"a reward", queries[stmtUpdateEvent], `('s', '', 1, 1, 1, 0, 'e', 1)`, "Index Cond: ((exp = $7) AND (seq = $8))", false},
		{"a forgotten reward", queries[stmtForget], `('e', 1)`, "Index Cond: ((exp = $1) AND (seq = $2))", false},
		{"an event by id", queryEvent, `('e', 'id')`, "Index Cond: ((event_id = $2) AND (exp = $1))", false},
		{"unit's rewards", queryUnitRewards, `('u', 'e')`, "Index Cond: ((unit_id = $1) AND (exp = $2))", false},
		// the tenant's experiments among the unit's rows
		{"unit's ledger", queryLedger, `('u', 2, 't/')`, "Index Cond: (unit_id = $1)", true},
		{"unit's total", queryUnitTotal, `('u', 2, 't/')`, "Index Cond: (unit_id = $1)", true},
	} {
		name := fmt.Sprintf("p%d", i)
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+s.rebind(c.query)); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+c.args)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan.WriteString(line + "\n")
		}
		rows.Close()
		if !strings.Contains(plan.String(), c.want) || strings.Contains(plan.String(), "Filter") != c.filter {
			t.Errorf("%s: generic plan\n%s\nhas no %s, or filters rows", c.name, plan.String(), c.want)
		}
	}
}

// TestOldEventIndexReplaced: a store made by an earlier version, with the
// event-id index that began with the experiment, opens with the new one
// in its place, on either store.
func TestOldEventIndexReplaced(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, dsn string) {
		db, _ := rawDB(t, dsn)
		if _, err := db.Exec(`DROP INDEX events_id_exp`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE UNIQUE INDEX events_by_event_id ON events (exp, event_id)`); err != nil {
			t.Fatal(err)
		}
		st, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := st.(*sqlStore)
		for name, want := range map[string]bool{"events_id_exp": true, "events_by_event_id": false} {
			tx, err := s.db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			has, err := s.has(context.Background(), tx, "index", name)
			tx.Rollback()
			if err != nil || has != want {
				t.Errorf("index %s: present %v (%v), want %v", name, has, err, want)
			}
		}
	})
}
