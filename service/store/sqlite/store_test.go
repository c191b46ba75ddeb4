package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
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
	db := st.SQL
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string // a plan step for each table read
	}{
		{"event by id", sqldb.QueryEvent + foldedOnly, []any{"e", "id"}, []string{"events USING INDEX events_id_exp_folded (event_id=? AND exp=?)"}},
		{"unit's ledger", sqldb.QueryLedger, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"unit's rewards", sqldb.QueryUnitRewards, []any{"u", "e"}, []string{"ledger USING PRIMARY KEY (unit_id=? AND exp=?)"}},
		{"unit's total", sqldb.QueryUnitTotal, []any{"u", 2, "t/"}, []string{"ledger USING PRIMARY KEY (unit_id=?)"}},
		{"a reward", sqldb.Queries[sqldb.StmtUpdateEvent], []any{"s", "", 1, 1, 1, 0, "e", 1}, []string{"events USING PRIMARY KEY (exp=? AND seq=?)"}},
		{"forgotten rewards", sqldb.Queries[sqldb.StmtForget], []any{"e", 1, 9}, []string{"events USING PRIMARY KEY (exp=? AND seq>? AND seq<?)"}},
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
