// Package storetest is what the service's tests share: the real stores
// they run on (a SQLite file, and a PostgreSQL server from the Debian
// packages on a loopback port, installed first when running as root, as
// .ci/run does) and their workloads. It is imported by tests only.
package storetest

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/dpbandit/dpbandit/service/internal/sqlq"
)

// postgres is a real PostgreSQL server started from the Debian packages
// for the package's tests: initdb and pg_ctl on a temporary directory,
// listening on a free loopback port, stopped by TestMain.
type postgres struct {
	dir, bin string
	port     int
	cred     *syscall.Credential
	err      error
}

var (
	pgOnce   sync.Once
	pgServer *postgres
	pgDBs    atomic.Int64
)

// pgBin finds the newest installed PostgreSQL's bin directory.
func pgBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a < b
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startPostgres starts the server once. PostgreSQL refuses to run as
// root: as root it runs as the packages' postgres user.
func startPostgres() *postgres {
	pgOnce.Do(func() {
		p := &postgres{bin: pgBin()}
		pgServer = p
		if p.bin == "" && os.Geteuid() == 0 {
			// As root, install the Debian package, as .ci/run does.
			fmt.Fprintln(os.Stderr, "service tests: PostgreSQL is not installed; installing the Debian package postgresql")
			cmd := exec.Command("sh", "-c", "apt-get update -qq && apt-get install -y -qq postgresql")
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				p.err = fmt.Errorf("apt-get install postgresql: %v: %s", err, out)
				return
			}
			p.bin = pgBin()
		}
		if p.bin == "" {
			p.err = fmt.Errorf("PostgreSQL is not installed (apt-get install postgresql)")
			return
		}
		var uid, gid int
		if os.Geteuid() == 0 {
			u, err := user.Lookup("postgres")
			if err != nil {
				p.err = fmt.Errorf("running as root and there is no postgres user: %v", err)
				return
			}
			uid, _ = strconv.Atoi(u.Uid)
			gid, _ = strconv.Atoi(u.Gid)
			p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
		dir, err := os.MkdirTemp("", "dpbandit-pg-")
		if err != nil {
			p.err = err
			return
		}
		p.dir = dir
		if p.cred != nil {
			if err := os.Chown(dir, uid, gid); err != nil {
				p.err = err
				return
			}
		}
		if p.port, err = freePort(); err != nil {
			p.err = err
			return
		}
		data := filepath.Join(dir, "data")
		if out, err := p.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
			p.err = fmt.Errorf("initdb: %v: %s", err, out)
			return
		}
		// The tests kill the service, never the database: flushing
		// PostgreSQL's own WAL to disk would test the disk, and slow
		// every commit; a commit is durable once the server has it.
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", p.port, dir)
		if out, err := p.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			p.err = fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
		}
	})
	return pgServer
}

func (p *postgres) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd.CombinedOutput()
}

// Stop stops the PostgreSQL server, if one was started: call it from
// TestMain after the tests ran.
func Stop() { pgServer.stop() }

func (p *postgres) stop() {
	if p == nil || p.dir == "" {
		return
	}
	if p.err == nil {
		p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "stop")
	}
	os.RemoveAll(p.dir)
}

// Postgres returns the URL of a new, empty database on the test
// server. The test fails if PostgreSQL cannot be started under CI (CI
// is set) or as root; elsewhere it is skipped, saying why.
func Postgres(t testing.TB) string {
	t.Helper()
	return PostgresWith(t, "")
}

// PostgresWith is Postgres for a database created WITH options.
func PostgresWith(t testing.TB, options string) string {
	t.Helper()
	p := startPostgres()
	if p.err != nil {
		if os.Getenv("CI") != "" || os.Geteuid() == 0 {
			t.Fatalf("PostgreSQL is needed: %v", p.err)
		}
		t.Skipf("skipping the PostgreSQL store: %v (install postgresql, or run as root)", p.err)
	}
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), pgDBs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" "+options); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, name)
}

// Main runs a test binary's tests (m.Run) with -parallel 4 unless set
// (most of these tests wait, on processes, leases and sleeps, not on
// the CPU), stops PostgreSQL and exits.
func Main(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	Stop()
	os.Exit(code)
}

// SQLite returns a fresh SQLite file, in memory-backed /dev/shm when
// there is one (commits then cost no disk flush; durability itself is
// tested by the crash test, on disk).
func SQLite(t testing.TB) string {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "dpbandit-test-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	return filepath.Join(dir, "state.db")
}

// ForStores runs f on a fresh SQLite store and a fresh PostgreSQL one.
func ForStores(t *testing.T, f func(t *testing.T, dsn string)) {
	for _, s := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", SQLite}, {"postgres", Postgres}} {
		t.Run(s.name, func(t *testing.T) { f(t, s.dsn(t)) })
	}
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") // (as stores.Postgres: this package is below it)
}

// DB opens the database of dsn directly, for a test that reads or
// tampers with what a store wrote; queries take ? placeholders through
// Rebind.
func DB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	driver, src := "sqlite", "file:"+dsn+"?_pragma=busy_timeout(5000)"
	if IsPostgres(dsn) {
		driver, src = "pgx", dsn
	}
	db, err := sql.Open(driver, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Rebind rewrites a query's ? placeholders as $n for PostgreSQL.
func Rebind(dsn, query string) string {
	if !IsPostgres(dsn) {
		return query
	}
	return sqlq.Dollar(query)
}

// Debited returns the sum of the debits stored on a unit's events in an
// experiment (the ledger's audit trail; q rebinds placeholders).
func Debited(t testing.TB, db *sql.DB, q func(string) string, exp, unit string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q(`SELECT COALESCE(SUM(debit), 0) FROM events WHERE exp = ? AND unit_id = ?`), exp, unit).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// StoredRewards counts the events of experiment exp whose reward is
// stored.
func StoredRewards(t testing.TB, dsn, exp string) int {
	t.Helper()
	var n int
	if err := DB(t, dsn).QueryRow(Rebind(dsn, `SELECT COUNT(*) FROM events WHERE exp = ? AND reward IS NOT NULL`), exp).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Directions returns a decision set of 4 random unit directions of R^2
// (as a client computes them: their norms may round above 1, which the
// service scales into the ball) and the best mean reward under theta.
func Directions(r *rand.Rand, theta []float64) ([][]float64, float64) {
	set := make([][]float64, 4)
	best := math.Inf(-1)
	for k := range set {
		phi := r.Float64() * 2 * math.Pi
		set[k] = []float64{math.Cos(phi), math.Sin(phi)}
		best = math.Max(best, theta[0]*set[k][0]+theta[1]*set[k][1])
	}
	return set, best
}

// PlayMixed takes n decisions (event ids prefix0, prefix1, ...),
// rewarding most at once, some later (out of order: late says so) and
// some never; one in ten comes from a shared unit (soon past its
// contribution limit). dim > 0 sends a decision set of random
// directions of R^2 as each context. decide returns the decided arm.
func PlayMixed(r *rand.Rand, dim, n int, prefix string, decide func(ev, unit string, ctxt any) int, reward func(ev string, x float64, late bool)) {
	var late []string
	for i := range n {
		ev := fmt.Sprintf("%s%d", prefix, i)
		unit := ev
		if i%10 == 9 {
			unit = "shared" // past its contribution limit: ignored
		}
		var ctxt any
		if dim > 0 {
			ctxt, _ = Directions(r, []float64{0.6, 0.8})
		}
		arm := decide(ev, unit, ctxt)
		switch u := r.Float64(); {
		case u < 0.1:
			late = append(late, ev)
		case u < 0.12: // never
		default:
			reward(ev, float64(arm%2)*r.Float64(), false)
		}
		if len(late) > 5 {
			reward(late[0], r.Float64(), true)
			late = late[1:]
		}
	}
}

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// BernoulliSpec is the spec of an AdaC-UCB experiment of arms arms with
// rewards in [0, 1] at zCDP rho, as a client sends it.
func BernoulliSpec(id string, arms int, rho float64) map[string]any {
	return map[string]any{"id": id, "algorithm": "adac-ucb", "arms": arms, "reward_range": []float64{0, 1},
		"privacy": map[string]float64{"rho": rho}}
}

// Play takes n decisions in sequence (event ids prefix0, prefix1, ...,
// each of its own unit "u"+id), each rewarded with a Bernoulli draw of
// its arm's mean, and returns the pulls per arm. decide returns the
// decided arm; reward reports whether the reward was learned, and a
// sequential reward that is not fails the test.
func Play(t testing.TB, means []float64, n int, seed uint64, prefix string, decide func(ev, unit string) int, reward func(ev string, x float64) bool) []int {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0))
	pulls := make([]int, len(means))
	for i := range n {
		ev := fmt.Sprintf("%s%d", prefix, i)
		arm := decide(ev, "u"+ev)
		pulls[arm]++
		x := 0.0
		if r.Float64() < means[arm] {
			x = 1
		}
		if !reward(ev, x) {
			t.Fatalf("the sequential reward of %s was not learned", ev)
		}
	}
	return pulls
}

// RankBody is a rank request with three articles and a context.
func RankBody(ev string, excluded []string, deferred bool) map[string]any {
	return map[string]any{
		"contextFeatures": []any{map[string]any{"weather": "sunny"}, map[string]any{"device": map[string]any{"os": "ios", "screen": 5.5}}},
		"actions": []any{
			map[string]any{"id": "news", "features": []any{map[string]any{"type": "news"}}},
			map[string]any{"id": "sports", "features": []any{map[string]any{"type": "sports", "len": 3}}},
			map[string]any{"id": "fun", "features": []any{map[string]any{"type": "fun"}}},
		},
		"excludedActions": excluded, "eventId": ev, "deferActivation": deferred,
	}
}
