package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/sqlq"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
)

// TestPostgresPlansUseTheirKeys: on a new PostgreSQL store, before any
// statistics, the generic plans of the statements that find an event
// (which pgx's prepared statements switch to after five runs) search
// the index of every column they match. The event-id index once began
// with the experiment, and the updates by (exp, seq) took its experiment
// prefix: each read the experiment's whole history (124 million index
// entries for 19 000 updates; 570 pairs a second instead of thousands).
func TestPostgresPlansUseTheirKeys(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Own(ctx, "test", nil); err != nil {
		t.Fatal(err)
	}
	conn, err := st.SQL.Conn(ctx)
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
		{"a reward", sqldb.Queries[sqldb.StmtUpdateEvent], `('s', '', 1, 1, 1, 0, 'e', 1)`, "Index Cond: ((exp = $7) AND (seq = $8))", false},
		{"forgotten rewards", sqldb.Queries[sqldb.StmtForget], `('e', 1, 9)`, "Index Cond: ((exp = $1) AND (seq >= $2) AND (seq <= $3))", true},
		{"an event by id", sqldb.QueryEvent, `('e', 'id')`, "Index Cond: ((event_id = $2) AND (exp = $1))", false},
		{"unit's rewards", sqldb.QueryUnitRewards, `('u', 'e')`, "Index Cond: ((unit_id = $1) AND (exp = $2))", false},
		// the tenant's experiments among the unit's rows
		{"unit's ledger", sqldb.QueryLedger, `('u', 2, 't/')`, "Index Cond: (unit_id = $1)", true},
		{"unit's total", sqldb.QueryUnitTotal, `('u', 2, 't/')`, "Index Cond: (unit_id = $1)", true},
	} {
		name := fmt.Sprintf("p%d", i)
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+sqlq.Dollar(c.query)); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+c.args)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if !strings.Contains(plan.String(), c.want) || strings.Contains(plan.String(), "Filter") != c.filter {
			t.Errorf("%s: generic plan\n%s\nhas no %s, or filters rows", c.name, plan.String(), c.want)
		}
	}
}

func TestMain(m *testing.M) { storetest.Main(m) }
