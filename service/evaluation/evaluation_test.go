package evaluation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/rank"
	"github.com/dpbandit/dpbandit/service/store"
)

// evalRounds ranks n events of "pz" (ids prefix-i), excluding at random
// up to two of the three actions when exclude is set, and rewards each:
// "fun" 1, "sports" 0.5, "news" 0, every third event's reward left to
// the default (0) by an expiry.
func evalRounds(t testing.TB, h *enginetest.Harness, prefix string, n int, exclude bool, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range n {
		var ex []string
		if exclude {
			for _, id := range []string{"news", "sports", "fun"} {
				if r.IntN(3) == 0 && len(ex) < 2 {
					ex = append(ex, id)
				}
			}
		}
		ev := fmt.Sprintf("%s-%d", prefix, i)
		res := rankOn(t, h, "pz", storetest.RankBody(ev, ex, false))
		h.Reward("pz", ev, map[string]float64{"fun": 1, "sports": 0.5, "news": 0}[res.RewardActionID])
	}
}

// evalRequest is an evaluation of everything decided so far, with the
// custom targets given.
func evalRequest(args ...string) Request {
	r := Request{Name: "e", Start: time.Unix(0, 0), End: time.Now().Add(time.Hour)}
	for _, a := range args {
		r.Policies = append(r.Policies, Policy{Name: "p-" + a, Arguments: a})
	}
	return r
}

// rawEvaluation returns the targets of an evaluation of x's whole log
// with the custom ones given, the log and ope's estimates before any
// release.
func rawEvaluation(t *testing.T, x Experiment, custom []Policy) ([]evalTarget, *evalLog, []*ope.Result) {
	t.Helper()
	targets, err := subjectOf(x).targets(context.Background(), custom)
	if err != nil {
		t.Fatal(err)
	}
	def := x.Definition()
	lg, err := subjectOf(x).log(context.Background(), def, time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, err := evaluateRaw(context.Background(), lg, targets)
	if err != nil {
		t.Fatal(err)
	}
	return targets, lg, got
}

// loggedEvent is an event of the experiment's log with its eligible
// vectors and logging distribution, as the test reads them.
type loggedEvent struct {
	e    store.Event
	set  [][]float64
	dist []float64
}

func loggedEvents(t *testing.T, h *enginetest.Harness, def define.Definition) []loggedEvent {
	t.Helper()
	var out []loggedEvent
	err := h.Store.Log(context.Background(), def.Key(), func(e store.Event) error {
		switch {
		case e.Status == store.Expired && e.Reward == nil: // the default reward, 0
			zero := 0.0
			e.Reward = &zero
		case e.Reward == nil:
			return nil
		}
		rs, err := define.ReadRank([]byte(e.Context), def.HashBits)
		if err != nil {
			return err
		}
		out = append(out, loggedEvent{e, rs.Set, def.Distribution(e)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEvaluationEqualsDpbanditEvaluate: on ranks whose three actions are
// all eligible, the evaluation's estimates (before their release) are
// those of `dpbandit evaluate --arms 3 --clip 20 --lo 0 --hi 1
// --max-events-per-unit 1` (ope.EvaluateAll with the targets uniform,
// arm:0 and logging) on the experiment's log written as its JSON lines
// by the test, to 1e-12: padding every event to the 50 actions of the
// surface changes no estimate. Its releases are ope.Private's of those
// estimates with the same noise, to the bit.
func TestEvaluationEqualsDpbanditEvaluate(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		evalRounds(t, h, "e", 120, false, 1)
		x := h.Get("pz")
		def := x.Definition()
		// The log as `dpbandit evaluate` reads it, K = 3.
		var jl strings.Builder
		for _, le := range loggedEvents(t, h, def) {
			rec := map[string]any{"action": le.e.Arm, "reward": *le.e.Reward, "pscore": le.e.PScore, "unit_id": le.e.Unit,
				"action_prob": le.dist, "context": le.set}
			jl.Write(mustJSON(t, rec))
			jl.WriteByte('\n')
		}
		var pols []ope.Policy
		for _, s := range []string{"logging", "arm:0", "uniform"} {
			p, err := ope.ParsePolicy(s)
			if err != nil {
				t.Fatal(err)
			}
			pols = append(pols, p)
		}
		open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(jl.String())), nil }
		want, err := ope.EvaluateAll(open, pols, ope.Options{Arms: 3, Clip: 20, Rewards: &mechanism.Bounds{Lo: 0, Hi: 1}, MaxEventsPerUnit: 1})
		if err != nil {
			t.Fatal(err)
		}
		targets, lg, got := rawEvaluation(t, x, nil)
		for i := range want {
			if got[i].Events != want[i].Events || got[i].Events != 120 {
				t.Fatalf("target %d: %d events, dpbandit evaluate %d", i, got[i].Events, want[i].Events)
			}
			for j, w := range want[i].Estimate {
				g := got[i].Estimate[j]
				for _, pair := range [][2]float64{{g.Value, w.Value}, {g.SE, w.SE}} {
					if math.IsNaN(pair[1]) && math.IsNaN(pair[0]) {
						continue
					}
					if math.Abs(pair[0]-pair[1]) > 1e-12 {
						t.Fatalf("target %s %s: %+v, dpbandit evaluate %+v", targets[i].args, w.Name, g, w)
					}
				}
			}
			if math.Abs(got[i].ESS-want[i].ESS) > 1e-9*want[i].ESS {
				t.Fatalf("target %d: ESS %v, dpbandit evaluate %v", i, got[i].ESS, want[i].ESS)
			}
		}
		// The releases: ope.Private's, with the same noise, in order.
		ev, err := evaluate(context.Background(), lg, targets, noise.Secure{Rand: rand.NewChaCha8([32]byte{9})})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := privacy.NewZCDP(1)
		part, _ := privacy.Split(b, 3*len(targets))
		nz := noise.Secure{Rand: rand.NewChaCha8([32]byte{9})}
		for i := range targets {
			for j, est := range []string{"ips", "snips", "dr"} {
				rel, err := ope.Private(got[i], est, part, nz)
				if err != nil {
					t.Fatal(err)
				}
				if g := ev.Policies[i].Releases[j]; string(mustJSON(t, g)) != string(mustJSON(t, rel)) {
					t.Fatalf("target %d %s: released %+v, ope.Private %+v", i, est, g, rel)
				}
			}
		}
	})
}

// TestEvaluationVaryingActions: on ranks with excluded actions (1 to 3
// eligible), each target's IPS and SNIPS are the test's own sums over
// the log, to 1e-12: online (weights 1), baseline (the first eligible
// action, weight 1/p where it was played), uniform (1/(k p)) and
// current (the released theta's greedy choice).
func TestEvaluationVaryingActions(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		evalRounds(t, h, "e", 150, true, 2)
		x := h.Get("pz")
		def := x.Definition()
		targets, _, got := rawEvaluation(t, x, []Policy{{"greedy", "current"}})
		m, err := rank.Export(context.Background(), x)
		if err != nil {
			t.Fatal(err)
		}
		events := loggedEvents(t, h, def)
		seenK := map[int]bool{}
		for i, tg := range targets {
			var num, den float64
			for _, le := range events {
				k := len(le.set)
				seenK[k] = true
				var pi float64
				switch tg.args {
				case "online":
					pi = le.dist[le.e.Arm]
				case "baseline":
					if le.e.Arm == 0 {
						pi = 1
					}
				case "uniform":
					pi = 1 / float64(k)
				case "current":
					pi = greedyProb(m.Theta, le.set, le.e.Arm)
				}
				w := min(pi/le.e.PScore, Clip)
				num += w * *le.e.Reward
				den += w
			}
			n := float64(len(events))
			ips, snips := got[i].Estimate[1].Value, got[i].Estimate[2].Value
			if math.Abs(ips-num/n) > 1e-12 || math.Abs(snips-num/den) > 1e-12 {
				t.Fatalf("target %s: ips %v snips %v, the log's sums %v %v", tg.args, ips, snips, num/n, num/den)
			}
		}
		if !seenK[1] || !seenK[2] || !seenK[3] {
			t.Fatalf("eligible sets of sizes %v: the test wants 1, 2 and 3", seenK)
		}
	})
}

// greedyProb is the probability that the greedy choice of theta on set
// plays a (ties split evenly).
func greedyProb(theta []float64, set [][]float64, a int) float64 {
	score := func(v []float64) float64 {
		s := 0.0
		for i, x := range v {
			s += theta[i] * x
		}
		return s
	}
	best, ties := math.Inf(-1), 0
	for _, v := range set {
		switch s := score(v); {
		case s > best:
			best, ties = s, 1
		case s == best:
			ties++
		}
	}
	if score(set[a]) == best {
		return 1 / float64(ties)
	}
	return 0
}

// TestEvaluationStoredOnce: an evaluation is released once and stored:
// reads return it as created, to the byte, twice, after a restart and
// after a crash; the list holds it; a deletion removes it (404
// EvaluationNotFound) and refunds nothing: past MaxPerExperiment
// evaluations (deleted ones included) an evaluation is refused
// (Conflict, OperationNotAllowed) and nothing is stored.
func TestEvaluationStoredOnce(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		evalRounds(t, h, "e", 40, true, 3)
		created, err := Create(context.Background(), h.Get("pz"), "ev0", evalRequest("current"))
		if err != nil {
			t.Fatal(err)
		}
		want := string(mustJSON(t, created))
		if len(created.Policies) != 4 || len(created.Policies[0].Releases) != 3 || created.Events != 40 || created.Privacy.SpentNanoRho != 1e9 {
			t.Fatalf("evaluation %s", want)
		}
		read := func(what string) {
			t.Helper()
			got, err := Get(context.Background(), h.Get("pz"), "ev0")
			if err != nil || string(mustJSON(t, got)) != want {
				t.Fatalf("%s: %s (%v), created %s", what, mustJSON(t, got), err, want)
			}
		}
		read("first read")
		read("second read")
		evalRounds(t, h, "more", 10, true, 4) // the log grows: the stored evaluation does not change
		h.Restart()
		read("after a restart")
		h.Crash()
		h.Open()
		read("after a crash")
		list, err := List(context.Background(), h.Get("pz"))
		if err != nil || len(list) != 1 || string(mustJSON(t, list[0])) != want {
			t.Fatalf("list %+v %v", list, err)
		}
		for i := 1; i < MaxPerExperiment; i++ {
			if _, err := Create(context.Background(), h.Get("pz"), fmt.Sprint("ev", i), evalRequest()); err != nil {
				t.Fatalf("evaluation %d: %v", i, err)
			}
		}
		if err := Delete(context.Background(), h.Get("pz"), "ev0"); err != nil {
			t.Fatal(err)
		}
		wantCode := func(what string, err error, kind fault.Kind, code string) {
			t.Helper()
			var ee *Error
			if fault.Of(err) != kind || !errors.As(err, &ee) || ee.Code != code {
				t.Fatalf("%s: %v (kind %v), want %v %s", what, err, fault.Of(err), kind, code)
			}
		}
		_, err = Get(context.Background(), h.Get("pz"), "ev0")
		wantCode("a deleted evaluation", err, fault.NotFound, "EvaluationNotFound")
		wantCode("a second deletion", Delete(context.Background(), h.Get("pz"), "nope"), fault.NotFound, "EvaluationNotFound")
		if err := Delete(context.Background(), h.Get("pz"), "ev0"); err != nil {
			t.Fatalf("deleting a deleted evaluation: %v", err)
		}
		_, err = Create(context.Background(), h.Get("pz"), "over", evalRequest())
		wantCode("past the cap, a deletion refunding nothing", err, fault.Conflict, "OperationNotAllowed")
		if spent, err := h.Store.EvaluationSpend(context.Background(), "default/pz"); err != nil || spent != MaxPerExperiment*1e9 {
			t.Fatalf("spent %d %v", spent, err)
		}
		if list, _ := List(context.Background(), h.Get("pz")); len(list) != MaxPerExperiment-1 {
			t.Fatalf("%d evaluations listed", len(list))
		}
	})
}

// TestEvaluationRefusals: requests that cannot be evaluated are refused
// with their field before anything is read or spent; without
// --keep-log the log is not there to read.
func TestEvaluationRefusals(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true})
	h.Create(personalizerSpec("pz"))
	evalRounds(t, h, "e", 5, false, 5)
	x := h.Get("pz")
	long := strings.Repeat("x", 257)
	for _, c := range []struct {
		field string
		req   Request
	}{
		{"name", Request{Start: time.Unix(0, 0), End: time.Now()}},
		{"name", Request{Name: long, Start: time.Unix(0, 0), End: time.Now()}},
		{"endTime", Request{Name: "e", Start: time.Now()}},
		{"endTime", Request{Name: "e", Start: time.Now(), End: time.Now().Add(-time.Hour)}},
		{"policies", evalRequest("--cb_explore_adf --epsilon 0.2")},
		{"policies", evalRequest(strings.Split(strings.Repeat("uniform ", maxPolicies+1), " ")[:maxPolicies+1]...)},
		{"startTime", Request{Name: "e", Start: time.Now().Add(time.Hour), End: time.Now().Add(2 * time.Hour)}},
	} {
		_, err := Create(context.Background(), x, "r", c.req)
		var ee *Error
		if !errors.As(err, &ee) || ee.Field != c.field || fault.Of(err) != fault.Invalid {
			t.Fatalf("%s: %v", c.field, err)
		}
	}
	if spent, _ := h.Store.EvaluationSpend(context.Background(), "default/pz"); spent != 0 {
		t.Fatalf("refusals spent %d", spent)
	}
	h2 := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{})
	h2.Create(personalizerSpec("pz"))
	if _, err := Create(context.Background(), h2.Get("pz"), "r", evalRequest()); fault.Of(err) != fault.Conflict {
		t.Fatalf("without --keep-log: %v", err)
	}
}

// TestEvaluationLogLine: an event's line pads the decision set and the
// distribution to K with zeros, and writes every number to the last
// bit.
func TestEvaluationLogLine(t *testing.T) {
	r := 0.1
	e := store.Event{Arm: 1, Reward: &r, PScore: 1.0 / 3, Unit: `u"1`}
	line := appendEvalFields([]byte("{"), e, [][]float64{{0.1, 1e-300}, {-2.5, 0}}, []float64{2.0 / 3, 1.0 / 3}, 3)
	var got struct {
		Action int         `json:"action"`
		Reward float64     `json:"reward"`
		PScore float64     `json:"pscore"`
		Unit   string      `json:"unit_id"`
		Probs  []float64   `json:"action_prob"`
		Set    [][]float64 `json:"context"`
	}
	if err := json.NewDecoder(bytes.NewReader(line)).Decode(&got); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	want := `{1 0.1 0.3333333333333333 u"1 [0.6666666666666666 0.3333333333333333 0] [[0.1 1e-300] [-2.5 0] [0 0]]}`
	if fmt.Sprint(got) != want || got.PScore != 1.0/3 || got.Probs[0] != 2.0/3 || !strings.HasSuffix(string(line), "\n") {
		t.Fatalf("%s read as %v", line, got)
	}
}

// TestEvaluationLogChanged: the log is streamed from the store at each
// pass; a pass that finds other events than the first (the log deleted
// between them) fails Unavailable, rather than let ope's passes
// disagree, and nothing is released.
func TestEvaluationLogChanged(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true})
	h.Create(personalizerSpec("pz"))
	evalRounds(t, h, "e", 60, false, 6)
	x := h.Get("pz")
	targets, err := subjectOf(x).targets(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := subjectOf(x).log(context.Background(), x.Definition(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Configure(context.Background(), define.Setting{LogsDeleted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := evaluate(context.Background(), lg, targets, noise.Secure{}); fault.Of(err) != fault.Unavailable {
		t.Fatalf("a log deleted between the passes: %v", err)
	}
}

// TestEvaluationLedgerConcurrent: the store checks the evaluation
// ledger's cap in the transaction that adds the evaluation, so that
// concurrent additions cannot pass it together: of 8 at once under a
// cap of 3 evaluations, exactly 3 are stored.
func TestEvaluationLedgerConcurrent(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		oks := make(chan bool, 8)
		for i := range 8 {
			go func() {
				ok, err := h.Store.AddEvaluation(context.Background(), store.EvaluationRow{Exp: "default/pz", ID: fmt.Sprint("c", i), Nano: 5, Result: "{}"}, 15)
				if err != nil {
					t.Error(err)
				}
				oks <- ok
			}()
		}
		n := 0
		for range 8 {
			if <-oks {
				n++
			}
		}
		if spent, err := h.Store.EvaluationSpend(context.Background(), "default/pz"); n != 3 || spent != 15 || err != nil {
			t.Fatalf("%d of 8 stored, %d spent (%v), want 3 and 15", n, spent, err)
		}
	})
}

// TestEvaluationFenced: once another service has taken the store, the
// old one's evaluations are neither stored nor deleted (ErrFenced), and
// the store holds none of them.
func TestEvaluationFenced(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		row := store.EvaluationRow{Exp: "default/pz", ID: "kept", Nano: 1, Result: "{}"}
		if ok, err := h.Store.AddEvaluation(context.Background(), row, 10); !ok || err != nil {
			t.Fatalf("add: %v %v", ok, err)
		}
		db := storetest.DB(t, dsn)
		if _, err := db.Exec(`UPDATE owner SET epoch = epoch + 1 WHERE id = 1`); err != nil { // a takeover
			t.Fatal(err)
		}
		row.ID = "fenced"
		if ok, err := h.Store.AddEvaluation(context.Background(), row, 10); ok || !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a fenced add: %v %v", ok, err)
		}
		if _, err := h.Store.DeleteEvaluation(context.Background(), "default/pz", "kept"); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a fenced delete: %v", err)
		}
		var n, deleted int
		if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(deleted), 0) FROM evaluations`).Scan(&n, &deleted); err != nil || n != 1 || deleted != 0 {
			t.Fatalf("%d rows, %d deleted (%v): want the first alone, kept", n, deleted, err)
		}
	})
}
