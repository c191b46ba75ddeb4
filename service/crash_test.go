package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/internal/syncbuf"
	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// dpbanditBin builds the dpbandit command once for the test binary's life.
func dpbanditBin(t *testing.T) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dpbandit-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "dpbandit")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/dpbandit/dpbandit/cmd/dpbandit").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running `dpbandit serve`.
type proc struct {
	cmd   *exec.Cmd
	base  string
	out   *syncbuf.Buffer
	ready chan string // the base URL, once listening; closed if it exits first
}

// serve starts the service and waits until it listens.
func serve(t *testing.T, args ...string) *proc {
	t.Helper()
	p := startServe(t, args...)
	if !p.listening(60 * time.Second) {
		p.kill()
		t.Fatalf("the service did not start: %s", p.out)
	}
	return p
}

// startServe starts the service without waiting for it to listen.
func startServe(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(dpbanditBin(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: &syncbuf.Buffer{}, ready: make(chan string, 1)}
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever the test's fate (a failed check leaked its services,
	// still running after the test binary had exited), the process dies
	// with the test; a second kill of a reaped process does nothing.
	t.Cleanup(p.kill)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), "listening on http://"); ok {
				p.ready <- "http://" + strings.Fields(after)[0]
				break
			}
		}
		close(p.ready)
		io.Copy(io.Discard, stdout)
	}()
	return p
}

// listening waits up to d for the service to listen, and records its URL.
func (p *proc) listening(d time.Duration) bool {
	if p.base != "" {
		return true
	}
	select {
	case base, ok := <-p.ready:
		p.base = base
		return ok
	case <-time.After(d):
		return false
	}
}

// serving waits for one of procs to listen, and returns it.
func serving(t *testing.T, procs []*proc) *proc {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		for _, p := range procs {
			if p.listening(10 * time.Millisecond) {
				return p
			}
		}
	}
	t.Fatal("no service took the store")
	return nil
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// post sends JSON and returns the status and body; status 0 on a
// transport error (the process was killed).
func post(c *http.Client, url string, v any) (int, []byte) {
	b, _ := json.Marshal(v)
	return postBody(c, url, "application/json", b)
}

// postBody sends body as ctype and returns the status and the answer's
// body; status 0 on a transport error (the process was killed).
func postBody(c *http.Client, url, ctype string, body []byte) (int, []byte) {
	resp, err := c.Post(url, ctype, bytes.NewReader(body))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

func get(c *http.Client, url string, out any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// acked is what the service acknowledged to the clients.
type acked struct {
	mu        sync.Mutex
	decisions map[string]int     // event -> arm
	rewards   map[string]float64 // event -> reward (acknowledged)
	releases  map[int64]float64  // operation -> released value, as seen in the state
}

// count returns the number of rewards acknowledged.
func (a *acked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.rewards)
}

// TestCrashSafety starts the real binary, drives it with concurrent
// clients and kills it with SIGKILL at random moments, 20 times, on
// SQLite (on disk) and on PostgreSQL. After every restart: every
// acknowledged decision and reward is stored, every release a client saw
// is stored unchanged (none lost, none re-drawn), each unit's ledger
// equals the sum of its debits (and k^2 rho for k rewards), and the
// experiment goes on. (Without the build tag heavy: 5 and 3 kills
// instead of 20 and 10.)
//
// In the racing variant two processes run on the store at every moment:
// each kill of the serving one is followed at once by the start of a new
// one, which races the waiting one for the store; exactly one of them
// serves (a second one listening at once fails the test), and the same
// checks hold after every takeover.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	for _, s := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "state.db") }}, {"postgres", storetest.Postgres}} {
		kills := [2]int{20, 10}
		if !heavy {
			kills = [2]int{5, 3}
		}
		t.Run(s.name, func(t *testing.T) { t.Parallel(); crashLoop(t, s.dsn(t), kills[0], 1) })
		t.Run(s.name+"-racing", func(t *testing.T) { t.Parallel(); crashLoop(t, s.dsn(t), kills[1], 2) })
	}
}

// crashLoop kills the serving process kills times, with racers processes
// started on the store at every moment.
func crashLoop(t *testing.T, dsn string, kills, racers int) {
	const workers, units = 6, 40
	a := &acked{decisions: map[string]int{}, rewards: map[string]float64{}, releases: map[int64]float64{}}
	r := rand.New(rand.NewPCG(7, 7))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	means := []float64{0.8, 0.6, 0.5, 0.4, 0.2}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	for round := 0; round <= kills; round++ {
		for len(procs) < racers {
			procs = append(procs, startServe(t, "--db", dsn, "--keep-log", "--tick", "50ms", "--snapshot-every", "64"))
		}
		p := serving(t, procs)
		exp := p.base + "/v1/experiments/crash"
		if round == 0 {
			spec := storetest.BernoulliSpec("crash", len(means), 0.5)
			spec["max_rewards_per_unit"] = 3
			if code, b := post(c, p.base+"/v1/experiments", spec); code != 201 {
				t.Fatalf("create: %d %s", code, b)
			}
		} else {
			checkAfterCrash(t, c, p.base, dsn, a, units)
		}
		if round == kills {
			break
		}
		n0 := a.count()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rr := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for i := 0; ctx.Err() == nil; i++ {
					ev := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					unit := fmt.Sprintf("u%d", rr.IntN(units))
					code, b := post(c, exp+"/decisions", map[string]string{"event_id": ev, "unit_id": unit})
					if code != 200 {
						return
					}
					var d outcome.Decision
					json.Unmarshal(b, &d)
					a.mu.Lock()
					a.decisions[ev] = d.Arm
					a.mu.Unlock()
					rwd := 0.0
					if rr.Float64() < means[d.Arm] {
						rwd = 1
					}
					if code, _ := post(c, exp+"/rewards", map[string]any{"event_id": ev, "reward": rwd}); code != 200 {
						return
					}
					a.mu.Lock()
					a.rewards[ev] = rwd
					a.mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() { // a reader of the released statistics
			defer wg.Done()
			for ctx.Err() == nil {
				var st outcome.State
				if get(c, exp, &st) != nil {
					return
				}
				a.mu.Lock()
				for _, rel := range st.Recent {
					if v, ok := a.releases[rel.Seq]; ok && v != rel.Value {
						t.Errorf("release of operation %d changed while running: %v then %v", rel.Seq, v, rel.Value)
					}
					a.releases[rel.Seq] = rel.Value
				}
				a.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
		// Kill once the round has done some work (at least 40 rewards,
		// whatever else runs on the machine), at a random moment after.
		for deadline := time.Now().Add(20 * time.Second); a.count()-n0 < 40; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d rewards acknowledged in 20 s", round, a.count()-n0)
			}
		}
		time.Sleep(time.Duration(r.IntN(160)) * time.Millisecond)
		for _, q := range procs {
			if q != p && q.listening(0) {
				t.Fatalf("two services listen on one store at once: %s and %s", p.base, q.base)
			}
		}
		p.kill() // SIGKILL, mid-flight
		procs = slices.DeleteFunc(procs, func(q *proc) bool { return q == p })
		cancel()
		wg.Wait()
	}
	if len(a.rewards) < 40*kills { // the kills hit a service under load
		t.Fatalf("only %d rewards acknowledged over %d kills", len(a.rewards), kills)
	}
	t.Logf("%d decisions, %d rewards acknowledged, %d releases seen, %d kills", len(a.decisions), len(a.rewards), len(a.releases), kills)
}

// checkAfterCrash checks the restarted service against what was
// acknowledged before the kill.
func checkAfterCrash(t *testing.T, c *http.Client, base, dsn string, a *acked, units int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	// Every acknowledged decision and reward is in the log.
	resp, err := c.Get(base + "/v1/experiments/crash/log")
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]map[string]any{}
	dec := json.NewDecoder(resp.Body)
	for {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			break
		}
		logged[rec["event_id"].(string)] = rec
	}
	resp.Body.Close()
	for ev, rwd := range a.rewards {
		rec, ok := logged[ev]
		if !ok {
			t.Fatalf("acknowledged reward of %s lost", ev)
		}
		if r, _ := rec["reward"].(float64); r != rwd || int(rec["action"].(float64)) != a.decisions[ev] {
			t.Fatalf("event %s stored as %v, acknowledged arm %d reward %v", ev, rec, a.decisions[ev], rwd)
		}
	}
	var st outcome.State
	if err := get(c, base+"/v1/experiments/crash", &st); err != nil {
		t.Fatal(err)
	}
	if st.Decisions < int64(len(a.decisions)) {
		t.Fatalf("%d decisions stored, %d acknowledged", st.Decisions, len(a.decisions))
	}
	// Every release a client saw is stored, with its value.
	db, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := db.History(context.Background(), "default/crash", store.Mark{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]float64{}
	for _, r := range h.Releases {
		if _, dup := stored[r.Seq]; dup && r.Kind == "gaussian" {
			// AdaC-UCB releases once per operation at most.
			t.Fatalf("operation %d released twice", r.Seq)
		}
		stored[r.Seq] = r.Value
	}
	if len(h.Releases) != st.Releases {
		t.Fatalf("the service counts %d releases, the store has %d", st.Releases, len(h.Releases))
	}
	// The restarts loaded snapshots (--snapshot-every 64), written under
	// the same kills.
	if sn, err := db.Snapshot(context.Background(), "default/crash"); err != nil || sn == nil || sn.Seq < 64 {
		t.Fatalf("no snapshot stored (%v, %v)", sn, err)
	}
	for seq, v := range a.releases {
		if got, ok := stored[seq]; !ok || got != v {
			t.Fatalf("release of operation %d: seen %v, stored %v (present %v)", seq, v, got, ok)
		}
	}
	// Each unit's ledger equals the sum of the debits on its events, and
	// k^2 rho.
	raw, q := rawDB(t, dsn)
	for u := range units {
		var led api.LedgerView
		if err := get(c, fmt.Sprintf("%s/v1/units/u%d/ledger", base, u), &led); err != nil {
			t.Fatal(err)
		}
		for _, row := range led.Experiments {
			if d := storetest.Debited(t, raw, q, "default/"+row.Experiment, fmt.Sprint("u", u)); row.NanoRho != d || row.NanoRho != row.Rewards*row.Rewards*5e8 {
				t.Fatalf("unit u%d: ledger %d nano-rho, debits %d, %d rewards (k^2 rho = %d)", u, row.NanoRho, d, row.Rewards, row.Rewards*row.Rewards*5e8)
			}
		}
	}
}

// TestGracefulShutdown sends SIGTERM while clients are running: the
// service stops accepting, answers the requests in flight, flushes, and
// exits with status 0; everything it acknowledged is in the store.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "state.db")
	p := serve(t, "--db", dsn, "--keep-log")
	c := &http.Client{Timeout: 10 * time.Second}
	if code, b := post(c, p.base+"/v1/experiments", storetest.BernoulliSpec("g", 3, 1)); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	a := &acked{decisions: map[string]int{}, rewards: map[string]float64{}, releases: map[int64]float64{}}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ev := fmt.Sprintf("w%d-%d", w, i)
				code, b := post(c, p.base+"/v1/experiments/g/decisions", map[string]string{"event_id": ev, "unit_id": ev})
				if code != 200 {
					return
				}
				var d outcome.Decision
				json.Unmarshal(b, &d)
				if code, _ := post(c, p.base+"/v1/experiments/g/rewards", map[string]any{"event_id": ev, "reward": 1}); code != 200 {
					return
				}
				a.mu.Lock()
				a.decisions[ev], a.rewards[ev] = d.Arm, 1
				a.mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGTERM)
	err := p.cmd.Wait()
	wg.Wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v: %s", err, p.out)
	}
	if len(a.rewards) == 0 {
		t.Fatal("no reward acknowledged before SIGTERM")
	}
	q := serve(t, "--db", dsn, "--keep-log")
	defer q.kill()
	resp, err := c.Get(q.base + "/v1/experiments/g/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	logged := map[string]bool{}
	dec := json.NewDecoder(resp.Body)
	for {
		var rec struct {
			EventID string `json:"event_id"`
			Status  string
		}
		if dec.Decode(&rec) != nil {
			break
		}
		logged[rec.EventID] = rec.Status == store.Learned || rec.Status == store.Ignored
	}
	for ev := range a.rewards {
		if !logged[ev] {
			t.Fatalf("acknowledged reward of %s missing after a graceful shutdown", ev)
		}
	}
}

// postLog posts a log to an import; status 0 on a transport error (the
// process was killed).
func postLog(c *http.Client, url, log string) (int, api.ImportAnswer) {
	var ans api.ImportAnswer
	code, b := postBody(c, url, "application/x-ndjson", []byte(log))
	json.Unmarshal(b, &ans)
	return code, ans
}

// TestImportSurvivesKill9: a real `dpbandit serve` is killed with SIGKILL
// while it imports a log of 5000 events (20 000 with the build tag
// heavy; on SQLite on disk and on
// PostgreSQL), at a random moment between the request's start and 1.2
// times the time a whole import took in that process. After the restart
// the experiment holds all of the import or nothing of it: with nothing,
// no event is stored and importing the log again does the whole import;
// with everything, importing it again changes nothing (its marker, the
// last decision, is stored, and every event id), and the stored events'
// debits sum to the imported totals', which the ledger holds. A partial
// import would hold events without the marker, and the second import
// would add operations to a non-empty experiment. (Without the build
// tag heavy: 3 kills per store instead of 10.) The count of each outcome
// is logged: which one a kill gives depends on the machine's timing.
func TestImportSurvivesKill9(t *testing.T) {
	t.Parallel()
	kills, events := 3, 5000
	if heavy {
		kills, events = 10, 20000
	}
	for _, s := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "state.db") }}, {"postgres", storetest.Postgres}} {
		t.Run(s.name, func(t *testing.T) { t.Parallel(); importKills(t, s.dsn(t), kills, events) })
	}
}

func importKills(t *testing.T, dsn string, kills, events int) {
	c := &http.Client{Timeout: 120 * time.Second}
	log := uniformLog([]float64{0.6, 0.4}, events, 8, "k")
	r := rand.New(rand.NewPCG(9, 9))
	p := serve(t, "--db", dsn)
	create := func(id string) {
		if code, b := post(c, p.base+"/v1/experiments", storetest.BernoulliSpec(id, 2, 0.5)); code != 201 {
			t.Fatalf("create %s: %d %s", id, code, b)
		}
	}
	// A whole import, timed, to spread the kills over one.
	create("timed")
	t0 := time.Now()
	if code, ans := postLog(c, p.base+"/v1/experiments/timed/import", log); code != 200 || ans.Events == 0 {
		t.Fatalf("import: %d %+v", code, ans)
	}
	took := time.Since(t0)
	outcomes := map[string]int{}
	for round := range kills {
		id := fmt.Sprintf("k%d", round)
		create(id)
		done := make(chan int, 1)
		go func() { code, _ := postLog(c, p.base+"/v1/experiments/"+id+"/import", log); done <- code }()
		time.Sleep(time.Duration(r.Int64N(int64(took) * 12 / 10)))
		p.kill()
		answered := <-done
		p = serve(t, "--db", dsn)
		var st outcome.State
		if err := get(c, p.base+"/v1/experiments/"+id, &st); err != nil {
			t.Fatal(err)
		}
		code, again := postLog(c, p.base+"/v1/experiments/"+id+"/import", log)
		if code != 200 {
			t.Fatalf("round %d: the import after the restart: %d", round, code)
		}
		switch {
		case st.Decisions == 0 && st.Imported == nil:
			outcomes["nothing"]++
			if answered == 200 {
				t.Fatalf("round %d: the import was acknowledged, and nothing of it is stored", round)
			}
			if again.Operations == 0 {
				t.Fatalf("round %d: an empty experiment took nothing from the log: %+v", round, again.Result)
			}
		case st.Imported != nil && st.Decisions == st.Imported.Events+st.Imported.NoLoggedReward:
			outcomes["everything"]++
			if again.Operations != 0 {
				t.Fatalf("round %d: %d decisions stored, and the same import again added %d operations: the first was half-applied", round, st.Decisions, again.Operations)
			}
			checkImportedDebits(t, c, p.base, dsn, id, st.Imported)
		default:
			t.Fatalf("round %d: a half-applied import: %+v, imported %+v", round, st.Counts, st.Imported)
		}
	}
	p.kill()
	t.Logf("a whole import of %d events took %v; %d kills left: %v", events, took, kills, outcomes)
}

// checkImportedDebits checks that the debits stored on an experiment's
// events sum to its imported totals', and that the ledger holds the last
// debited unit's (the log's units are each event's own: one reward).
func checkImportedDebits(t *testing.T, c *http.Client, base, dsn, id string, imp *importer.Totals) {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.History(context.Background(), "default/"+id, store.Mark{})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	var unit string
	for _, e := range h.Events {
		sum += e.Debit
		if e.Debit > 0 {
			unit = e.Unit
		}
	}
	if sum != imp.NanoRho || sum == 0 {
		t.Fatalf("%s: the stored events debit %d nano-rho, the imported totals say %d", id, sum, imp.NanoRho)
	}
	var led api.LedgerView
	if err := get(c, base+"/v1/units/"+unit+"/ledger", &led); err != nil {
		t.Fatal(err)
	}
	for _, row := range led.Experiments {
		if row.Experiment == id && row.Rewards == 1 && row.NanoRho == 5e8 {
			return
		}
	}
	t.Fatalf("%s: unit %s's ledger %+v, want its one reward's 5e8 nano-rho in %s", id, unit, led, id)
}
