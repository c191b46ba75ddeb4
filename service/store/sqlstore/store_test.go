package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestLookupsUseTheirKeys: the store's reads on the request path find
// their rows through an index on every column they match, in SQLite's own
// query plans: a lookup that matched only the experiment would read all of
// its history (a retried event id once its event left memory, a unit's
// ledger), in time that grows with the experiment, holding its lock.
func TestLookupsUseTheirKeys(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), storetest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Own(context.Background(), "test", nil); err != nil {
		t.Fatal(err)
	}
	db := st.(*sqlStore).db
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string // a plan step for each table read
	}{
		{"event by id", queryEvent + foldedOnly, []any{"e", "id"}, []string{"events USING INDEX events_id_exp_folded (event_id=? AND exp=?)"}},
		{"unit's ledger", queryLedger, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"unit's rewards", queryUnitRewards, []any{"u", "e"}, []string{"ledger USING PRIMARY KEY (unit_id=? AND exp=?)"}},
		{"unit's total", queryUnitTotal, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"a reward", queries[stmtUpdateEvent], []any{"s", "", 1, 1, 1, 0, "e", 1}, []string{"events USING PRIMARY KEY (exp=? AND seq=?)"}},
		{"forgotten rewards", queries[stmtForget], []any{"e", 1, 9}, []string{"events USING PRIMARY KEY (exp=? AND seq>? AND seq<?)"}},
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
	s := st.(*sqlStore)
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
		{"forgotten rewards", queries[stmtForget], `('e', 1, 9)`, "Index Cond: ((exp = $1) AND (seq >= $2) AND (seq <= $3))", true},
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

// TestOldEventIndexReplaced: a store with the event-id indexes of earlier
// versions (alone, or beside the new one, which an older version started
// after an upgrade builds again) has the new index alone once a service
// owns it, on either store, or once a replica joins it (PostgreSQL,
// CONCURRENTLY); an index left invalid by an interrupted concurrent build
// is built again. Before the store is held, nothing is built.
func TestOldEventIndexReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	indexes := func(t *testing.T, s *sqlStore) (names []string) {
		t.Helper()
		tx, err := s.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, n := range append([]string{s.eventIndex().name}, s.eventIndex().old...) {
			if has, err := s.has(ctx, tx, "index", n); err != nil {
				t.Fatal(err)
			} else if has {
				names = append(names, n)
			}
		}
		return names
	}
	// The cases run in turn on one store, each leaving it with the new
	// index alone.
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		eventIndex := (&sqlStore{postgres: strings.HasPrefix(dsn, "postgres")}).eventIndex().name
		oldOnes := []string{`DROP INDEX ` + eventIndex, `CREATE UNIQUE INDEX events_by_event_id ON events (exp, event_id)`, `CREATE INDEX events_by_id ON events (exp, event_id)`}
		both := oldOnes[1:]
		invalid := []string{`UPDATE pg_index SET indisvalid = false WHERE indexrelid = '` + eventIndex + `'::regclass`}
		cases := []struct {
			name    string
			setup   []string
			replica bool
			oldOnes bool // the setup leaves old indexes (to be replaced)
		}{
			{"old-only", oldOnes, false, true},
			{"old-beside-new", both, false, true},
			{"old-only-replica", oldOnes, true, true},
			{"old-beside-new-replica", both, true, true},
			{"invalid-replica", invalid, true, false},
		}
		for _, c := range cases {
			if c.replica && !strings.HasPrefix(dsn, "postgres") {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				if err := func() error {
					pre, err := Open(ctx, dsn)
					if err != nil {
						return err
					}
					defer pre.Close()
					if err := pre.Own(ctx, "setup", nil); err != nil {
						return err
					}
					for _, st := range c.setup {
						if _, err := pre.(*sqlStore).db.Exec(st); err != nil {
							return err
						}
					}
					return nil
				}(); err != nil {
					t.Fatal(err)
				}
				st, err := Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				s := st.(*sqlStore)
				before := indexes(t, s)
				if c.replica {
					err = s.Join(ctx, store.Replica{ID: "r", Addr: "http://127.0.0.1:1/r"}, time.Second, 0, nil)
				} else {
					err = s.Own(ctx, "test", nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := indexes(t, s); !slices.Equal(got, []string{eventIndex}) {
					t.Errorf("indexes %v before the store was held, %v after; want only %s", before, got, eventIndex)
				}
				var valid bool
				if s.postgres {
					if err := s.db.QueryRow(`SELECT indisvalid FROM pg_index WHERE indexrelid = '` + eventIndex + `'::regclass`).Scan(&valid); err != nil || !valid {
						t.Errorf("the index is not valid (%v)", err)
					}
				}
				if c.oldOnes && slices.Equal(before, indexes(t, s)) {
					t.Errorf("nothing to replace: the setup left %v", before)
				}
			})
		}
	})
}

// TestCanonicalPath: every name of a SQLite file locks one lock file: a
// symbolic link, a link to a link, a link whose target does not exist
// yet (the first open creates it; found by a reviewer), a linked
// directory.
func TestCanonicalPath(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "state.db")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	want := canonicalPath(target)
	link := func(to, name string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dangling := link(target, "dangling.db")
	relative := link(filepath.Join("real", "state.db"), "relative.db")
	chain := link(dangling, "chain.db")
	linkedDir := filepath.Join(link(filepath.Join(dir, "real"), "linkdir"), "state.db")
	for _, p := range []string{dangling, relative, chain, linkedDir} {
		if got := canonicalPath(p); got != want {
			t.Errorf("%s (target not created yet): %s, want %s", p, got, want)
		}
	}
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{target, dangling, relative, chain, linkedDir} {
		if got := canonicalPath(p); got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
}

func TestMain(m *testing.M) { storetest.Main(m) }
