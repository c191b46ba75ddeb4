package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/internal/contract"
	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// harness is a Server on a store behind an httptest server.
type harness struct {
	t     testing.TB
	dsn   string
	cfg   Config
	store store.Store
	wrap  func(store.Store) store.Store
	srv   *Server
	http  *httptest.Server
	token string
}

func start(t testing.TB, dsn string, cfg Config) *harness {
	t.Helper()
	return startWrapped(t, dsn, cfg, nil)
}

// startWrapped is start on the store wrap makes of the real one (nil:
// the real one).
func startWrapped(t testing.TB, dsn string, cfg Config, wrap func(store.Store) store.Store) *harness {
	t.Helper()
	h := &harness{t: t, dsn: dsn, cfg: cfg, wrap: wrap}
	h.open()
	t.Cleanup(h.close)
	return h
}

// eachStore runs f, in parallel with the other tests, on a harness
// started with cfg on each store (SQLite, then PostgreSQL). Each store's
// harness starts from cfg as given: a ChaCha8 Entropy is copied, so
// that both draw the same numbers.
func eachStore(t *testing.T, cfg Config, f func(t *testing.T, h *harness)) {
	t.Parallel()
	var seed []byte
	if src, ok := cfg.Entropy.(*rand.ChaCha8); ok {
		var err error
		if seed, err = src.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := cfg
		if seed != nil {
			src := new(rand.ChaCha8)
			if err := src.UnmarshalBinary(seed); err != nil {
				t.Fatal(err)
			}
			c.Entropy = src
		}
		f(t, start(t, dsn, c))
	})
}

func (h *harness) open() {
	h.t.Helper()
	st, err := Open(context.Background(), h.dsn)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.wrap != nil {
		st = h.wrap(st)
	}
	cfg := h.cfg
	cfg.Store = st
	srv, err := New(context.Background(), cfg)
	if err != nil {
		st.Close()
		h.t.Fatal(err)
	}
	h.store, h.srv, h.http = st, srv, httptest.NewServer(contract.Handler(h.t, srv.Handler()))
}

func (h *harness) close() {
	if h.srv == nil {
		return
	}
	h.http.Close()
	h.srv.Close()
	h.store.Close()
	h.srv = nil
}

// ledger returns unit's ledger (GET /v1/units/{unit}/ledger).
func (h *harness) ledger(unit string) api.LedgerView {
	h.t.Helper()
	var led api.LedgerView
	h.call("GET", "/v1/units/"+unit+"/ledger", nil, 200, &led)
	return led
}

// restartKeeps restarts the service and fails the test unless what view
// shows of experiment id's state is the same after as before.
func (h *harness) restartKeeps(id string, view func(outcome.State) []any) {
	h.t.Helper()
	h.keepsAcross(id, view, h.restart)
}

// restart closes the server and opens a new one on the same store.
func (h *harness) restart() {
	h.close()
	h.open()
}

// do sends a request and returns the status and the body.
func (h *harness) do(method, path, ctype string, body []byte) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// call sends v as JSON and decodes the answer into out; it fails the
// test unless the status is want.
func (h *harness) call(method, path string, v any, want int, out any) []byte {
	h.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	code, b := h.do(method, path, "application/json", body)
	if code != want {
		h.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			h.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

func (h *harness) create(spec map[string]any) outcome.State {
	var st outcome.State
	h.call("POST", "/v1/experiments", spec, 201, &st)
	return st
}

func (h *harness) state(id string) outcome.State {
	var st outcome.State
	h.call("GET", "/v1/experiments/"+id, nil, 200, &st)
	return st
}

func (h *harness) decide(id, ev, unit string) outcome.Decision {
	var d outcome.Decision
	h.call("POST", "/v1/experiments/"+id+"/decisions", map[string]string{"event_id": ev, "unit_id": unit}, 200, &d)
	return d
}

func (h *harness) reward(id, ev string, r float64) outcome.RewardResult {
	var res outcome.RewardResult
	h.call("POST", "/v1/experiments/"+id+"/rewards", map[string]any{"event_id": ev, "reward": r}, 200, &res)
	return res
}

// play takes n decisions in sequence, each rewarded with a Bernoulli
// draw of its arm's mean, and returns the pulls per arm (storetest.Play).
func (h *harness) play(id string, means []float64, n int, seed uint64, prefix string) []int {
	return storetest.Play(h.t, means, n, seed, prefix,
		func(ev, unit string) int { return h.decide(id, ev, unit).Arm },
		func(ev string, x float64) bool { return h.reward(id, ev, x).Learned })
}

func TestServiceLearnsAndRetriesAreIdempotent(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 3, 1))
		means := []float64{0.9, 0.2, 0.1}
		pulls := h.play("e", means, 1500, 1, "")
		// AdaC-UCB at rho = 1 with gaps 0.7 and 0.8: after its K initial
		// pulls and a few doubling episodes of the bad arms (their counts
		// double only when their index wins), the good arm has most pulls.
		if float64(pulls[0]) < 0.8*1500 {
			t.Fatalf("the best arm got %d of 1500 decisions (%v)", pulls[0], pulls)
		}
		before := h.state("e")
		// A retried decision returns the same decision and counts nothing.
		d1 := h.decide("e", "0", "u0")
		if d1.Arm != 0 || h.state("e").Decisions != before.Decisions {
			t.Fatalf("retry changed something: %+v", d1)
		}
		// A retried reward, of any value, is the same answer and counts
		// nothing: the first counts (TestRewardRetriesAnsweredAlike).
		for _, r := range []float64{0, 1} {
			var r0 outcome.RewardResult
			h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": "1", "reward": r}, 200, &r0)
			if st := h.state("e"); !r0.Learned || st.Rewards != before.Rewards || st.Learned != before.Learned {
				t.Fatalf("a retried reward was counted again: %+v, %d rewards, before %d", r0, st.Rewards, before.Rewards)
			}
		}
		h.call("POST", "/v1/experiments/e/decisions", map[string]string{"event_id": "0", "unit_id": "other"}, 409, nil)
		if st := h.state("e"); st.Decisions != 1500 || st.Rewards != 1500 || st.Learned != 1500 {
			t.Fatalf("counts %+v, want 1500 decisions, rewards and learned", st.Counts)
		}
	})
}

func TestStateShowsOnlyReleasedStatistics(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 2, 0.01))
		// Every reward of arm 0 is 1 and of arm 1 is 0: the raw means are 1
		// and 0 exactly; the released ones carry noise of sd w/(n sqrt(2 rho)).
		for i := range 200 {
			ev := fmt.Sprint(i)
			d := h.decide("e", ev, ev)
			h.reward("e", ev, float64(1-d.Arm))
		}
		raw := h.call("GET", "/v1/experiments/e", nil, 200, nil)
		var st outcome.State
		json.Unmarshal(raw, &st)
		if len(st.Released) != 2 {
			t.Fatalf("released %+v", st.Released)
		}
		for _, r := range st.Released {
			if r.Mean == float64(1-r.Arm) {
				t.Fatalf("arm %d's released mean is its raw mean %v", r.Arm, r.Mean)
			}
			if want := 1 / (float64(r.Samples) * math.Sqrt(2*0.01)); math.Abs(r.Noise-want) > 1e-9*want {
				t.Fatalf("arm %d: noise sd %v, want w/(n sqrt(2 rho)) = %v", r.Arm, r.Noise, want)
			}
		}
		// The state has no field for sums or raw means.
		var fields map[string]any
		json.Unmarshal(raw, &fields)
		for k := range fields {
			if strings.Contains(k, "sum") || strings.Contains(k, "raw") {
				t.Fatalf("state field %q", k)
			}
		}
	})
}

func TestTenantsAndRoles(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		toks := map[string]api.Token{
			"aaaaaaaaaaaaaaaaadmin": {Tenant: "a", Role: api.RoleAdmin},
			"aaaaaaaaaaaaaaaclient": {Tenant: "a", Role: api.RoleClient},
			"bbbbbbbbbbbbbbbbadmin": {Tenant: "b", Role: api.RoleAdmin},
		}
		h := start(t, dsn, Config{Tokens: toks})
		h.token = "aaaaaaaaaaaaaaaaadmin"
		h.create(storetest.BernoulliSpec("ea", 2, 1))
		h.token = "aaaaaaaaaaaaaaaclient"
		h.decide("ea", "1", "u")
		h.call("POST", "/v1/experiments", storetest.BernoulliSpec("x", 2, 1), 403, nil)
		h.call("GET", "/v1/experiments/ea", nil, 403, nil)
		h.token = "bbbbbbbbbbbbbbbbadmin"
		h.call("GET", "/v1/experiments/ea", nil, 404, nil)
		h.call("POST", "/v1/experiments/ea/decisions", map[string]string{"event_id": "2", "unit_id": "u"}, 404, nil)
		h.call("POST", "/v1/experiments/ea/rewards", map[string]any{"event_id": "1", "reward": 1}, 404, nil)
		var list []outcome.State
		h.call("GET", "/v1/experiments", nil, 200, &list)
		if len(list) != 0 {
			t.Fatalf("tenant b lists %d experiments", len(list))
		}
		// Ids are the tenant's own: b's "ea" is another experiment.
		if st := h.create(storetest.BernoulliSpec("ea", 2, 1)); st.Decisions != 0 || st.Tenant != "b" {
			t.Fatalf("b's ea: %+v", st)
		}
		h.call("POST", "/v1/experiments", storetest.BernoulliSpec("ea", 2, 1), 409, nil)
		h.token = ""
		h.call("GET", "/v1/experiments", nil, 401, nil)
		h.token = "not-a-token-at-all-really"
		h.call("GET", "/v1/experiments", nil, 401, nil)
		code, _ := h.do("GET", "/healthz", "", nil)
		if code != 200 {
			t.Fatalf("healthz %d", code)
		}
		// The scheme's case does not matter (RFC 7235); the token's does.
		for auth, want := range map[string]int{"bearer aaaaaaaaaaaaaaaaadmin": 200, "BEARER aaaaaaaaaaaaaaaaadmin": 200, "Bearer AAAAAAAAAAAAAAAAADMIN": 401} {
			req, _ := http.NewRequest("GET", h.http.URL+"/v1/experiments", nil)
			req.Header.Set("Authorization", auth)
			resp, err := h.http.Client().Do(req)
			if err != nil || resp.StatusCode != want {
				t.Fatalf("Authorization %q: %v %v, want %d", auth, resp.Status, err, want)
			}
			resp.Body.Close()
		}
		h.token = "aaaaaaaaaaaaaaaclient"
		h.call("GET", "/metrics", nil, 403, nil)
		h.token = "aaaaaaaaaaaaaaaaadmin"
		b := h.call("GET", "/metrics", nil, 200, nil)
		if !bytes.Contains(b, []byte(`dpbandit_decisions_total{experiment="a/ea"} 1`)) {
			t.Fatal("the decision is not in the metrics")
		}
	})
}

func TestLedgerContributionAndCap(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		// rho 0.5 costs 5e8 nano-rho per first reward; k rewards cost k^2 times it.
		h := start(t, dsn, Config{UnitBudget: 6e9})
		spec := storetest.BernoulliSpec("e1", 2, 0.5)
		spec["max_rewards_per_unit"] = 3
		h.create(spec)
		want := []string{"", "", "", "contribution_limit"}
		for i, reason := range want {
			ev := fmt.Sprint(i)
			h.decide("e1", ev, "alice")
			if res := h.reward("e1", ev, 1); res.Reason != reason || res.Learned != (reason == "") {
				t.Fatalf("reward %d of alice: %+v, want reason %q", i+1, res, reason)
			}
		}
		led := h.ledger("alice")
		raw, q := rawDB(t, dsn)
		if len(led.Experiments) != 1 || led.TotalNanoRho != 9*5e8 || storetest.Debited(t, raw, q, "default/e1", "alice") != led.Experiments[0].NanoRho || led.Experiments[0].Rewards != 3 {
			t.Fatalf("ledger %+v, want 3 rewards costing 9 x 5e8 nano-rho, equal to the debits", led)
		}
		// A second experiment: alice has 6e9 - 4.5e9 = 1.5e9 left: one
		// reward at 0.5 (5e8) fits, the second (1.5e9 more) does not.
		spec = storetest.BernoulliSpec("e2", 2, 0.5)
		spec["max_rewards_per_unit"] = 5
		h.create(spec)
		for i, reason := range []string{"", "unit_budget", "unit_budget"} {
			ev := fmt.Sprint(i)
			h.decide("e2", ev, "alice")
			if res := h.reward("e2", ev, 1); res.Reason != reason {
				t.Fatalf("e2 reward %d: %+v, want reason %q", i+1, res, reason)
			}
		}
		h.restart()
		h.call("GET", "/v1/units/alice/ledger", nil, 200, &led)
		if led.TotalNanoRho != 5e9 || len(led.Experiments) != 2 {
			t.Fatalf("after restart: %+v, want 5e9 nano-rho over 2 experiments", led)
		}
		// The cap survives the restart.
		h.decide("e2", "9", "alice")
		if res := h.reward("e2", "9", 1); res.Reason != "unit_budget" {
			t.Fatalf("after restart: %+v", res)
		}
	})
}

func TestRestartReplaysReleasesAndDetectsTampering(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 3, 0.5))
		means := []float64{0.7, 0.5, 0.3}
		h.play("e", means, 400, 2, "a")
		h.decide("e", "pending", "p") // a decision waiting for its reward
		h.restartKeeps("e", func(s outcome.State) []any {
			return []any{s.Released, s.Counts, s.Pulls, s.Releases, s.Recent, s.Pending}
		})
		h.reward("e", "pending", 1)
		h.play("e", means, 100, 3, "b")
		// A stored release altered: replay must refuse, not re-draw.
		h.close()
		st, err := Open(context.Background(), h.dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := storetest.DB(t, h.dsn)
		// (and the snapshots deleted, so that the whole history is
		// replayed: TestTamperedReleaseAfterSnapshot tampers after one)
		if _, err := db.Exec(storetest.Rebind(h.dsn, `UPDATE releases SET scale = scale * 2 WHERE exp = ? AND idx = 3`), "default/e"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`DELETE FROM snapshots`); err != nil {
			t.Fatal(err)
		}
		srv, err := New(context.Background(), Config{Store: st})
		if err != nil {
			t.Fatalf("one tampered experiment kept the service from starting: %v", err)
		}
		// It is served 503 alone, saying why; the others are served.
		x, _ := srv.Get("default", "e")
		if _, _, err := x.StartDecide("again", "u", "", nil); !errors.Is(err, tape.ErrDiverged) && (err == nil || !strings.Contains(err.Error(), "replaying")) {
			t.Fatalf("tampered experiment: %v, want tape.ErrDiverged", err)
		}
		if st, _ := x.State(context.Background()); !strings.Contains(st.Failed, "replaying the history") {
			t.Fatalf("state of the tampered experiment: %+v", st)
		}
		srv.Close()
		st.Close()
	})
}

func TestRewardWindow(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, Config{Now: c.Now})
		spec := storetest.BernoulliSpec("dflt", 2, 1)
		spec["reward_window_seconds"] = 10
		spec["default_reward"] = 0.25
		h.create(spec)
		spec = storetest.BernoulliSpec("drop", 2, 1)
		spec["reward_window_seconds"] = 10
		h.create(spec)
		d1 := h.decide("dflt", "1", "u")
		d2 := h.decide("drop", "1", "u")
		c.Add(5 * time.Second)
		h.srv.Expire()
		if st := h.state("dflt"); st.Defaulted != 0 {
			t.Fatal("expired before the window")
		}
		c.Add(6 * time.Second)
		h.srv.Expire()
		if st := h.state("dflt"); st.Defaulted != 1 || st.Learned != 0 || st.Pending != 0 {
			t.Fatalf("default: %+v", st.Counts)
		}
		if st := h.state("drop"); st.Expired != 1 || st.Pending != 0 {
			t.Fatalf("drop: %+v", st.Counts)
		}
		h.call("POST", "/v1/experiments/dflt/rewards", map[string]any{"event_id": "1", "reward": 1}, 409, nil)
		// The dropped slot is taken again: the next decision learns, on the
		// same plan (arm 0's initial pull).
		d3 := h.decide("drop", "2", "u2")
		if !d3.Learns || d3.Arm != d2.Arm || d3.PolicyVersion != d2.PolicyVersion {
			t.Fatalf("after a drop: %+v, first %+v", d3, d2)
		}
		// The default reward was learned as arm 0's initial pull: the next
		// plan is arm 1's.
		if d := h.decide("dflt", "2", "u2"); d.Arm == d1.Arm || d.PolicyVersion != 2 {
			t.Fatalf("after the default: %+v", d)
		}
		// Restarted with a decision pending and its window passed: the loop
		// settles it at its first run.
		c.Add(20 * time.Second)
		h.restart()
		h.srv.Expire()
		if st := h.state("drop"); st.Expired != 2 {
			t.Fatalf("after restart: %+v", st.Counts)
		}
	})
}

// playMixed takes n decisions of experiment id through the API,
// rewarding most at once, some later (out of order) and some never
// (storetest.PlayMixed).
func playMixed(h *harness, id string, dim, n int, r *rand.Rand, prefix string) {
	storetest.PlayMixed(r, dim, n, prefix, func(ev, unit string, ctxt any) int {
		body := map[string]any{"event_id": ev, "unit_id": unit}
		if ctxt != nil {
			body["context"] = ctxt
		}
		var d outcome.Decision
		h.call("POST", "/v1/experiments/"+id+"/decisions", body, 200, &d)
		return d.Arm
	}, func(ev string, x float64, late bool) {
		if !late {
			h.reward(id, ev, x)
			return
		}
		// A late reward is learned, or refused once its slot was
		// resolved as overdue (409).
		b, _ := json.Marshal(map[string]any{"event_id": ev, "reward": x})
		if code, body := h.do("POST", "/v1/experiments/"+id+"/rewards", "application/json", b); code != 200 && code != 409 {
			h.t.Fatalf("late reward: %d %s", code, body)
		}
	})
}

// storedRewards counts the events whose reward is stored.
func storedRewards(t *testing.T, h *harness, id string) int {
	return storetest.StoredRewards(t, h.dsn, "default/"+id)
}

// storesOnlyUnreleased fails unless the rewards stored for experiment id
// are exactly those no release covers yet.
func storesOnlyUnreleased(t *testing.T, h *harness, id string) {
	t.Helper()
	st := h.state(id) // (once what it shows is durable)
	n := int64(storedRewards(t, h, id))
	t.Logf("%s: %d rewards stored, %d unreleased, %d learned", id, n, st.Unreleased, st.Learned+st.Defaulted)
	if n != st.Unreleased {
		t.Fatalf("%d rewards stored, %d unreleased (pooled rewards %d): released episodes' must be deleted, the others kept", n, st.Unreleased, st.Pooled)
	}
}

func TestDataMinimisationAndLog(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 3, 0.5))
		means := []float64{0.7, 0.5, 0.3}
		h.play("e", means, 300, 4, "a")
		// Exactly the current episode's rewards remain, also with
		// rewards late, missing and ignored.
		storesOnlyUnreleased(t, h, "e")
		st := h.state("e")
		h.create(storetest.BernoulliSpec("m", 3, 0.5))
		playMixed(h, "m", 0, 300, rand.New(rand.NewPCG(6, 0)), "m")
		storesOnlyUnreleased(t, h, "m")
		// Rewards in the reverse order of their decisions: the first
		// learned after a deletion is not the earliest decision.
		for b := range 30 {
			var evs []string
			for i := range 8 {
				ev := fmt.Sprintf("r%d-%d", b, i)
				h.decide("m", ev, "u"+ev)
				evs = append(evs, ev)
			}
			for _, ev := range slices.Backward(evs) {
				h.reward("m", ev, 1)
			}
			storesOnlyUnreleased(t, h, "m")
		}
		h.restart()
		if after := h.state("e"); fmt.Sprint(after.Released) != fmt.Sprint(st.Released) {
			t.Fatalf("replay with deleted rewards changed the releases: %v vs %v", after.Released, st.Released)
		}
		h.play("e", means, 50, 5, "b")
		h.call("GET", "/v1/experiments/e/log", nil, 409, nil)

		k := start(t, storetest.SQLite(t), Config{KeepLog: true})
		k.create(storetest.BernoulliSpec("e", 3, 0.5))
		k.play("e", means, 100, 4, "a")
		if n := storedRewards(t, k, "e"); n != 100 {
			t.Fatalf("--keep-log kept %d rewards of 100", n)
		}
		_, b := k.do("GET", "/v1/experiments/e/log", "", nil)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &rec); len(lines) != 100 || err != nil {
			t.Fatalf("log: %d lines, %v", len(lines), err)
		}
		for _, f := range []string{"event_id", "unit_id", "action", "reward", "pscore", "timestamp"} {
			if _, ok := rec[f]; !ok {
				t.Fatalf("log line lacks %q: %v", f, rec)
			}
		}
	})
}

func TestBatchRewards(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 2, 1))
		h.decide("e", "1", "u1")
		h.decide("e", "2", "u2")
		body := "{\"event_id\":\"1\",\"reward\":1}\n{\"event_id\":\"nope\",\"reward\":1}\n{bad\n{\"event_id\":\"2\",\"reward\":7}\n"
		code, b := h.do("POST", "/v1/experiments/e/rewards", "application/x-ndjson", []byte(body))
		if code != 200 {
			t.Fatalf("batch: %d %s", code, b)
		}
		var codes []int
		for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ Code int }
			json.Unmarshal([]byte(ln), &r)
			codes = append(codes, r.Code)
		}
		if fmt.Sprint(codes) != "[200 404 400 422]" {
			t.Fatalf("batch statuses %v: %s", codes, b)
		}
	})
}

// TestBatchLineStatusIsTheSingleOnes: a reward whose request ends before
// it is durable answers the same status alone and as a batch line (503:
// retry; it was 500 in a batch).
func TestBatchLineStatusIsTheSingleOnes(t *testing.T) {
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	h.decide("e", "1", "u1")
	h.decide("e", "2", "u2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	send := func(ctype, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/experiments/e/rewards", strings.NewReader(body))
		req.Host = "127.0.0.1" // loopback: no token file needed
		req.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		contract.Handler(t, h.srv.Handler()).ServeHTTP(w, req)
		return w
	}
	single := send("application/json", `{"event_id":"1","reward":1}`).Code
	w := send("application/x-ndjson", `{"event_id":"2","reward":1}`+"\n")
	var line struct{ Code int }
	if err := json.Unmarshal(w.Body.Bytes(), &line); err != nil {
		t.Fatalf("batch answer %d %q: %v", w.Code, w.Body, err)
	}
	if single != 503 || line.Code != single {
		t.Fatalf("a reward whose request ended: %d alone, %d as a batch line; want 503 both", single, line.Code)
	}
}

// badRequests are inputs every handler must answer with a 4xx and a JSON
// error (the fuzz test's seeds).
var badRequests = []struct{ method, path, body string }{
	{"POST", "/v1/experiments", `{`},
	{"POST", "/v1/experiments", `[]`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":"five","reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1},"extra":1}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"ucb1","arms":5,"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[1,0],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":0}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1e400}}`},
	{"POST", "/v1/experiments", `{"id":"x y","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-gope","actions":[[1,0],[0,2]],"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-gope","actions":[[1,0],[0,1.000001]],"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-oful","arms":3,"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1},"exploration":1.5}`},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1},"exploration":-0.1}`},
	// Found by a stranger's trial: a range that is not two numbers, and
	// explicit zeros that once became the defaults.
	{"POST", "/v1/experiments", `{"id":"z1","algorithm":"adac-ucb","arms":5,"reward_range":[0,1,2],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"z2","algorithm":"adac-ucb","arms":5,"reward_range":[-1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"z3","algorithm":"adac-ucb","arms":5,"reward_range":null,"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"z4","algorithm":"adac-ucb","arms":5,"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"z5","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1},"max_rewards_per_unit":0}`},
	{"POST", "/v1/experiments", `{"id":"z6","algorithm":"adac-ucb","arms":5,"reward_range":[0,1],"privacy":{"rho":1},"reward_window_seconds":0}`},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"","unit_id":"u"}`},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":1,"unit_id":"u"}`},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"a","unit_id":"u","context":[NaN]}`},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"a"}`},
	{"POST", "/v1/experiments/lin/decisions", `{"event_id":"a","unit_id":"u","context":[1,2,3]}`},
	{"POST", "/v1/experiments/lin/decisions", `{"event_id":"a","unit_id":"u","context":[3,4]}`},
	{"POST", "/v1/experiments/nope/decisions", `{"event_id":"a","unit_id":"u"}`},
	{"POST", "/v1/experiments/ctx/decisions", `{"event_id":"a","unit_id":"u"}`},
	{"POST", "/v1/experiments/ctx/decisions", `{"event_id":"a","unit_id":"u","context":[[1,0]]}`},
	{"POST", "/v1/experiments/ctx/decisions", `{"event_id":"a","unit_id":"u","context":[[1,0],[0,1,0]]}`},
	{"POST", "/v1/experiments/ctx/decisions", `{"event_id":"a","unit_id":"u","context":[[1,0],[0,1.5]]}`},
	{"POST", "/v1/experiments/ctx/decisions", `{"event_id":"a","unit_id":"u","context":[1,0]}`},
	{"POST", "/v1/experiments", `{"id":"y","algorithm":"adac-oful","arms":3,"dim":0,"reward_range":[0,1],"privacy":{"rho":1},"horizon":10}`},
	{"POST", "/v1/experiments", `{"id":"y","algorithm":"adac-ucb","arms":3,"dim":2,"reward_range":[0,1],"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"id":"y","algorithm":"private-lasso","arms":3,"dim":2,"reward_range":[0,1],"privacy":{"eps":1,"delta":1e-6}}`},
	// Found by a stranger's review: decision sets that cannot fit in a
	// context (400 x 100 zeros are 80,801 bytes, over 64 KiB).
	{"POST", "/v1/experiments", `{"id":"y","algorithm":"adac-oful","arms":400,"dim":100,"reward_range":[0,1],"privacy":{"rho":1},"horizon":10}`},
	{"POST", "/v1/experiments", `{"id":"y","algorithm":"adac-oful","arms":325,"dim":100,"reward_range":[0,1],"privacy":{"rho":1},"horizon":10}`}, // 65,651 bytes
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"zz","reward":1}`},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"seed","reward":"NaN"}`},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"seed","reward":2}`},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"seed","reward":-1e308}`},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"seed"}`},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"seed","reward":1}{}`},
	{"GET", "/v1/experiments/nope", ``},
	{"GET", "/v1/units//ledger", ``},
	{"DELETE", "/v1/experiments/e", ``},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"big","unit_id":"u","context":"` + strings.Repeat("x", 70000) + `"}`},
	{"POST", "/v1/experiments", `{"id":"` + strings.Repeat("y", 2<<20) + `"}`},
	{"POST", "/v1/experiments/e/decisions", "{\"event_id\":\"a\x00b\",\"unit_id\":\"u\"}"},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"a\u0000b","unit_id":"u"}`},
	{"POST", "/v1/experiments/e/decisions", "{\"event_id\":\"a\xff\",\"unit_id\":\"u\"}"},
	{"POST", "/v1/experiments/e/decisions", `{"event_id":"a","unit_id":"` + strings.Repeat("u", 10000) + `"}`},
	{"POST", "/v1/experiments/e/decisions", "{\"event_id\":\"a\",\"unit_id\":\"u\",\"context\":\"\xff\"}"},
	{"POST", "/v1/experiments/e/rewards", `{"event_id":"a\u0000","reward":1}`},
	{"GET", "/v1/units/a%00b/ledger", ``},
	{"GET", "/v1/units/a%FFb/ledger", ``},
	{"GET", "/v1/units/" + strings.Repeat("u", 10000) + "/ledger", ``},
	{"POST", "/v1/experiments", `{"id":"x","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1},"privacy":{"rho":1}}`},
	{"POST", "/v1/experiments", `{"ID":"x","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`},
}

// fuzzHarness has a finite-armed experiment "e" with a pending event
// "seed", and a linear one "lin" in dimension 2.
func fuzzHarness(t testing.TB, dsn string) *harness {
	h := start(t, dsn, Config{})
	h.create(storetest.BernoulliSpec("e", 3, 1))
	h.create(map[string]any{"id": "lin", "algorithm": "adac-gope", "actions": [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}},
		"reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 1}})
	h.create(map[string]any{"id": "ctx", "algorithm": "adac-oful", "arms": 2, "dim": 2, "horizon": 1000,
		"reward_range": []float64{0, 1}, "privacy": map[string]float64{"rho": 1}})
	h.decide("e", "seed", "u")
	return h
}

func TestBadInputsAre4xxWithJSON(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := fuzzHarness(t, dsn)
		for _, r := range badRequests {
			code, b := h.do(r.method, r.path, "application/json", []byte(r.body))
			var e struct{ Error string }
			if code < 400 || code >= 500 || json.Unmarshal(b, &e) != nil || e.Error == "" {
				t.Errorf("%s %s %.80q: %d %s", r.method, r.path, r.body, code, b)
			}
		}
	})
}

// FuzzHandlers sends arbitrary bodies to every route, on SQLite and on
// PostgreSQL: the answer is never a 5xx, an error is always JSON with a
// message, and both stores give the same status (they agree on what
// input is valid).
func FuzzHandlers(f *testing.F) {
	for _, r := range badRequests {
		if len(r.body) < 16384 {
			f.Add(r.method, r.path, r.body)
		}
	}
	f.Add("POST", "/v1/experiments/e/decisions", `{"event_id":"ok","unit_id":"u"}`)
	stores := []*harness{fuzzHarness(f, storetest.SQLite(f)), fuzzHarness(f, storetest.Postgres(f))}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if method != "GET" && method != "POST" {
			method = "POST"
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#\x00\r\n\t") {
			return
		}
		var codes []int
		for _, h := range stores {
			req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.http.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("%s %s %q: %d %s", method, path, body, resp.StatusCode, b)
			}
			if resp.StatusCode >= 400 {
				var e struct{ Error string }
				if json.Unmarshal(b, &e) != nil || e.Error == "" {
					t.Fatalf("%s %s %q: %d without a JSON error: %s", method, path, body, resp.StatusCode, b)
				}
			}
			codes = append(codes, resp.StatusCode)
		}
		if codes[0] != codes[1] {
			t.Fatalf("%s %s %q: SQLite answers %d, PostgreSQL %d", method, path, body, codes[0], codes[1])
		}
	})
}

func TestContextualExperiment(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(map[string]any{"id": "ctx", "algorithm": "adac-oful", "arms": 4, "dim": 2, "horizon": 4000,
			"reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 10}})
		h.call("POST", "/v1/experiments/ctx/decisions", map[string]any{"event_id": "x", "unit_id": "u"}, 400, nil)
		h.call("POST", "/v1/experiments/ctx/decisions", map[string]any{"event_id": "x", "unit_id": "u", "context": [][]float64{{1, 0}}}, 400, nil)
		h.call("POST", "/v1/experiments/ctx/decisions", map[string]any{"event_id": "x", "unit_id": "u",
			"context": [][]float64{{1, 0}, {0, 1}, {2, 0}, {0, 0}}}, 400, nil)
		// theta* = (0.8, -0.6); each decision set is 4 random directions.
		r := rand.New(rand.NewPCG(9, 9))
		theta := []float64{0.8, -0.6}
		var regret, first, last float64
		const n = 1500
		for i := range n {
			set, best := storetest.Directions(r, theta)
			ev := fmt.Sprint(i)
			var d outcome.Decision
			h.call("POST", "/v1/experiments/ctx/decisions", map[string]any{"event_id": ev, "unit_id": ev, "context": set}, 200, &d)
			mean := theta[0]*set[d.Arm][0] + theta[1]*set[d.Arm][1]
			regret += best - mean
			if i == 199 {
				first = regret / 200
			}
			rwd := math.Max(-1, math.Min(1, mean+0.1*r.NormFloat64()))
			h.reward("ctx", ev, rwd)
		}
		last = (regret - first*200) / (n - 200)
		t.Logf("regret per step: %.3f over the first 200 decisions, %.3f after", first, last)
		// Random choice has mean regret about 0.8 per step here; the
		// policy learns theta and its regret per step falls.
		if !(last < first/2 && last < 0.2) {
			t.Fatalf("regret per step %v over the first 200 steps, %v after", first, last)
		}
		h.restartKeeps("ctx", func(s outcome.State) []any { return []any{s.Counts, s.Releases, s.Recent, s.Episodes} })
	})
}

// TestRewardRetriesAnsweredAlike: a second reward for an event that has
// one is answered with the first one's result (the first counts), the
// same while the event is in memory, once it has left memory, and after a
// restart: the service deletes rewards it no longer needs (and never
// stores ignored ones), so it cannot tell a retry from another value
// once they are gone, and must not answer differently before. Found by
// an independent review (a 409 in memory, 200 from the store).
func TestRewardRetriesAnsweredAlike(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{KeepEvents: 1})
	sp := storetest.BernoulliSpec("e", 2, 0.5)
	sp["max_rewards_per_unit"] = 1
	h.create(sp)
	h.decide("e", "x0", "U")
	first := h.reward("e", "x0", 1) // learned
	h.decide("e", "x1", "U")
	second := h.reward("e", "x1", 1) // ignored: the unit's limit
	if !first.Learned || second.Reason != "contribution_limit" {
		t.Fatal(first, second)
	}
	retries := func(when string) {
		for ev, want := range map[string]outcome.RewardResult{"x0": first, "x1": second} {
			for _, r := range []float64{1, 0} {
				var got outcome.RewardResult
				h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": ev, "reward": r}, 200, &got)
				if got != want {
					t.Errorf("%s: reward %v for %s answered %+v, want the first's %+v", when, r, ev, got, want)
				}
			}
		}
	}
	retries("in memory")
	for i := range 5 {
		h.decide("e", fmt.Sprint("y", i), fmt.Sprint("w", i))
		h.reward("e", fmt.Sprint("y", i), 1)
	}
	retries("out of memory")
	h.restart()
	retries("after a restart")
}
