package ope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// world is a simulated logging process with known values: x uniform on
// [-1, 1], K = 2 arms, Bernoulli rewards of mean mu(x, a), actions drawn
// by a logging policy whose probability of arm 0 depends on x.
type world struct {
	mu   func(x float64, a int) float64
	log0 func(x float64) float64 // logging probability of arm 0
}

// value of "always arm a": E_x[mu(x, a)], by the midpoint rule.
func (w world) value(a int) float64 {
	const n = 100000
	s := 0.0
	for i := range n {
		s += w.mu(-1+(2*float64(i)+1)/n, a)
	}
	return s / n
}

// write logs n events as JSON lines, with action_prob.
func (w world) write(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for range n {
		x := 2*r.Float64() - 1
		p0 := w.log0(x)
		a := 1
		if r.Float64() < p0 {
			a = 0
		}
		probs := []float64{p0, 1 - p0}
		rew := 0.0
		if r.Float64() < w.mu(x, a) {
			rew = 1
		}
		enc.Encode(map[string]any{"context": []float64{x}, "action": a, "reward": rew, "pscore": probs[a], "action_prob": probs})
	}
	return b.Bytes()
}

func opener(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// IPS, SNIPS and DR cover the true value of a fixed target policy at
// their stated 95%: over 200 logs, the number of intervals that miss is
// Binomial(200, 0.05) if the intervals are right (and the normal
// approximation holds); more than 22 misses (mean 10 plus 4 standard
// deviations of 3.1) fails. DM's model is wrong here (mu(x, 0) = x^2,
// fit linearly in x under a logging policy that favours arm 0 near 0):
// its mean error over the logs is more than 4 of its standard errors,
// while DR's is not.
func TestEstimatorsCoverTrueValue(t *testing.T) {
	w := world{
		mu: func(x float64, a int) float64 {
			if a == 0 {
				return x * x
			}
			return 0.5
		},
		log0: func(x float64) float64 {
			if math.Abs(x) < 0.5 {
				return 0.8
			}
			return 0.2
		},
	}
	truth := w.value(0) // 1/3
	r := noise.Stream(7)
	const reps, n = 200, 2000
	miss := map[string]int{}
	errs := map[string][]float64{}
	for range reps {
		res, err := Evaluate(opener(w.write(r, n)), Always(0), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Estimate {
			if truth < e.Lo || truth > e.Hi {
				miss[e.Name]++
			}
			errs[e.Name] = append(errs[e.Name], e.Value-truth)
		}
	}
	for _, name := range []string{"ips", "snips", "dr"} {
		if miss[name] > 22 {
			t.Errorf("%s: %d of %d intervals miss the true value %v", name, miss[name], reps, truth)
		}
	}
	bias := func(x []float64) (m, se float64) {
		var mo moments
		for _, v := range x {
			mo.add(v)
		}
		return mo.mean(), mo.se()
	}
	if m, se := bias(errs["dm"]); math.Abs(m) < 4*se {
		t.Errorf("DM with a wrong model: mean error %v, SE %v: no bias found", m, se)
	}
	if m, se := bias(errs["dr"]); math.Abs(m) > 4*se {
		t.Errorf("DR: mean error %v, SE %v: biased", m, se)
	}
}

// The estimators' numbers equal a direct in-memory computation of the
// same formulas (the ridge model solved by QR rather than Cholesky), on
// a log with clipped weights.
func TestEstimatorsMatchDirectComputation(t *testing.T) {
	w := world{
		mu:   func(x float64, a int) float64 { return 0.3 + 0.2*x*float64(1-2*a) + 0.1*float64(a) },
		log0: func(x float64) float64 { return 0.1 + 0.8*(x+1)/2 },
	}
	log := w.write(noise.Stream(3), 500)
	const clip = 4.0
	pi := []float64{0.7, 0.3} // a stochastic target
	res, err := Evaluate(opener(log), fixed(pi), Options{Clip: clip, Lambda: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	// Direct computation.
	type ev struct {
		x     float64
		a     int
		r, ps float64
	}
	var evs []ev
	dec := json.NewDecoder(bytes.NewReader(log))
	for dec.More() {
		var j struct {
			Context []float64
			Action  int
			Reward  float64
			PScore  float64 `json:"pscore"`
		}
		if err := dec.Decode(&j); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev{j.Context[0], j.Action, j.Reward, j.PScore})
	}
	n := float64(len(evs))
	phi := func(x float64, a int) []float64 {
		f := make([]float64, 4)
		f[2*a], f[2*a+1] = x, 1
		return f
	}
	// Ridge by QR on the augmented system [Phi; sqrt(lambda) I] theta = [r; 0].
	A := mat.NewDense(len(evs)+4, 4, nil)
	y := mat.NewVecDense(len(evs)+4, nil)
	for i, e := range evs {
		A.SetRow(i, phi(e.x, e.a))
		y.SetVec(i, e.r)
	}
	for j := range 4 {
		A.Set(len(evs)+j, j, math.Sqrt(0.5))
	}
	var qr mat.QR
	qr.Factorize(A)
	var theta mat.VecDense
	if err := qr.SolveVecTo(&theta, false, y); err != nil {
		t.Fatal(err)
	}
	q := func(x float64, a int) float64 { return mat.Dot(mat.NewVecDense(4, phi(x, a)), &theta) }
	var ips, sw, swr, dm, dr float64
	for _, e := range evs {
		wt := math.Min(pi[e.a]/e.ps, clip)
		ips += wt * e.r
		sw += wt
		swr += wt * e.r
		v := pi[0]*q(e.x, 0) + pi[1]*q(e.x, 1)
		dm += v
		dr += v + wt*(e.r-q(e.x, e.a))
	}
	want := map[string]float64{"ips": ips / n, "snips": swr / sw, "dm": dm / n, "dr": dr / n}
	for _, e := range res.Estimate {
		if math.Abs(e.Value-want[e.Name]) > 1e-9 {
			t.Errorf("%s = %.12f, direct computation %.12f", e.Name, e.Value, want[e.Name])
		}
	}
	if res.Events != 500 || res.Arms != 2 {
		t.Fatalf("%d events, %d arms", res.Events, res.Arms)
	}
}

// fixed is a target policy with the same distribution everywhere.
type fixed []float64

func (f fixed) Probs(_ *Event, p []float64) error { copy(p, f); return nil }

// The logging policy evaluated on its own log has weights 1: IPS is the
// observed mean reward and the effective sample size is n.
func TestLoggingPolicyIsObservedMean(t *testing.T) {
	w := world{mu: func(x float64, a int) float64 { return 0.2 + 0.5*float64(a) }, log0: func(float64) float64 { return 0.3 }}
	log := w.write(noise.Stream(5), 1000)
	res, err := Evaluate(opener(log), Logging{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var j struct{ Reward float64 }
		json.Unmarshal([]byte(l), &j)
		mean += j.Reward / 1000
	}
	if ips := res.Estimate[1]; ips.Name != "ips" || math.Abs(ips.Value-mean) > 1e-12 || math.Abs(res.ESS-1000) > 1e-9 {
		t.Fatalf("IPS %v (ESS %v), observed mean %v", ips, res.ESS, mean)
	}
}

// Replay: a uniformly logged log of two arms of means 0.3 and 0.7; a
// learner that always plays arm 1 is worth 0.7 (within 4 SE), matched on
// about half the events; a log with other propensities is refused.
func TestReplay(t *testing.T) {
	w := world{mu: func(x float64, a int) float64 { return 0.3 + 0.4*float64(a) }, log0: func(float64) float64 { return 0.5 }}
	log := w.write(noise.Stream(9), 4000)
	res, err := Replay(opener(log), 0, &constLearner{1})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Value; math.Abs(v.Value-0.7) > 4*v.SE || math.Abs(float64(res.Matched)-2000) > 4*math.Sqrt(1000) {
		t.Fatalf("replay: %+v", res)
	}
	skew := world{mu: w.mu, log0: func(float64) float64 { return 0.6 }}.write(noise.Stream(9), 10)
	var le *LogError
	if _, err := Replay(opener(skew), 0, &constLearner{1}); !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), "uniform") {
		t.Fatalf("replay on non-uniform logging: %v", err)
	}
}

type constLearner struct{ a int }

func (c *constLearner) Choose(*Event) (int, error) { return c.a, nil }
func (c *constLearner) Learn(float64) error        { return nil }

// Bad logs: one LogError each, at its line.
func TestBadLogs(t *testing.T) {
	good := `{"action":0,"reward":1,"pscore":0.5,"action_prob":[0.5,0.5]}` + "\n"
	for _, c := range []struct {
		name, log  string
		arms, line int
		want       string
	}{
		{"pscore 0", good + `{"action":1,"reward":1,"pscore":0}`, 2, 2, "pscore 0 must lie in (0, 1]"},
		{"pscore above 1", good + `{"action":1,"reward":1,"pscore":1.5}`, 2, 2, "(0, 1]"},
		{"pscore missing", good + `{"action":1,"reward":1}`, 2, 2, "no pscore"},
		{"action outside", good + `{"action":2,"reward":1,"pscore":0.5}`, 2, 2, "action 2 outside"},
		{"negative action", `{"action":-1,"reward":1,"pscore":0.5}`, 2, 1, "outside"},
		{"NaN reward (CSV)", "action,reward,pscore\n0,1,0.5\n1,NaN,0.5\n", 2, 3, "not a finite number"},
		{"NaN reward (JSON)", good + `{"action":1,"reward":NaN,"pscore":0.5}`, 2, 2, "not a JSON object"},
		{"text reward", "action,reward,pscore\n0,yes,0.5\n", 2, 2, "not a number"},
		{"underscore in a number", "action,reward,pscore\n0,1_0,0.5\n", 2, 2, "not a number"},
		{"hexadecimal context", "action,reward,pscore,context_0\n0,1,0.5,0x1p-2\n", 2, 2, "not a number"},
		{"unknown K", `{"action":0,"reward":1,"pscore":0.5}`, 0, 1, "--arms"},
		{"pscore vs action_prob", `{"action":0,"reward":1,"pscore":0.4,"action_prob":[0.5,0.5]}`, 0, 1, "differs"},
		{"ragged CSV", "action,reward,pscore\n0,1,0.5\n1,0\n", 2, 3, "number of fields"},
		{"no pscore column", "action,reward\n0,1\n", 2, 1, `no column "pscore"`},
		{"context shape", `{"action":0,"reward":1,"pscore":0.5,"context":[1]}` + "\n" + `{"action":0,"reward":1,"pscore":0.5,"context":[1,2]}`, 2, 2, "shape"},
		{"reward missing", good + `{"action":1,"pscore":0.5}`, 2, 2, "no reward"},
		{"action a string", `{"action":"1","reward":1,"pscore":0.5}`, 2, 1, "not an integer"},
		{"CSV line after blank lines", "action,reward,pscore\n0,1,0.5\n\n\n1,1,0\n", 2, 5, "pscore 0"},
		{"CSV line after a quoted field over two lines", "action,reward,pscore,note\n0,1,0.5,\"a\nb\"\n1,1,0,c\n", 2, 4, "pscore 0"},
		{"context column gap", "action,reward,pscore,context_0,context_2\n0,1,0.5,1,2\n", 2, 1, "context_1"},
		{"context column twice", "action,reward,pscore,context_0,context_0\n0,1,0.5,1,2\n", 2, 1, "twice"},
		{"context column not numbered", "action,reward,pscore,context_x\n0,1,0.5,1\n", 2, 1, "context_x"},
	} {
		_, err := Evaluate(opener([]byte(c.log)), Uniform{}, Options{Arms: c.arms})
		var le *LogError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want line %d: %q", c.name, err, c.line, c.want)
		}
	}
	for _, empty := range []string{"", "\n\n \n", "\ufeff"} {
		if _, err := Evaluate(opener([]byte(empty)), Uniform{}, Options{Arms: 2}); !errors.Is(err, ErrNoEvents) {
			t.Errorf("empty log %q: %v", empty, err)
		}
	}
	if _, err := Evaluate(opener([]byte(`{"action":0,"reward":null,"pscore":0.5}`)), Uniform{}, Options{Arms: 2}); !errors.Is(err, ErrNoEvents) {
		t.Errorf("log without rewards: %v", err)
	}
}

// TestLogLayouts: a UTF-8 byte-order mark and leading blank lines are
// skipped (JSON lines and CSV), and CSV context columns are read by
// their index, not their order in the header (context_1 before
// context_0, context_10 before context_2).
func TestLogLayouts(t *testing.T) {
	xs := func(log string) [][]float64 {
		rd, err := NewReader(strings.NewReader(log), 2)
		if err != nil {
			t.Fatalf("%q: %v", log, err)
		}
		var out [][]float64
		for {
			e, err := rd.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatalf("%q: %v", log, err)
			}
			out = append(out, e.X)
		}
	}
	for _, log := range []string{
		"\ufeffaction,reward,pscore,context_0,context_1\n0,1,0.5,7,8\n",
		"\n\naction,reward,pscore,context_1,context_0\n0,1,0.5,8,7\n",
		"\ufeff\n" + `{"action":0,"reward":1,"pscore":0.5,"context":[7,8]}` + "\n",
	} {
		if got := xs(log); len(got) != 1 || !slices.Equal(got[0], []float64{7, 8}) {
			t.Errorf("%q: contexts %v, want [[7 8]]", log, got)
		}
	}
	var head, row []string
	for i := range 12 {
		j := (i + 5) % 12 // context_5, ..., context_11, context_0, ...
		head, row = append(head, fmt.Sprintf("context_%d", j)), append(row, strconv.Itoa(j))
	}
	log := "action,reward,pscore," + strings.Join(head, ",") + "\n0,1,0.5," + strings.Join(row, ",") + "\n"
	if got := xs(log); len(got) != 1 || !slices.Equal(got[0], []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Errorf("twelve shuffled context columns read as %v", got)
	}
}

// The private release: noise of the scale the mechanism computes for
// the sensitivity Clip (hi - lo) / n, Gaussian for zCDP with sd within
// 4 standard errors of sigma over 4000 releases; refused without a cap;
// released once per key, even by concurrent callers.
func TestPrivateIPS(t *testing.T) {
	w := world{mu: func(x float64, a int) float64 { return 0.5 }, log0: func(float64) float64 { return 0.5 }}
	log := w.write(noise.Stream(2), 200)
	bounds := mechanism.Unit
	o := Options{Arms: 2, Clip: 5, Rewards: &bounds}
	res, err := Evaluate(opener(log), Always(0), o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := privacy.NewZCDP(0.5)
	for _, c := range []struct {
		o    Options
		want error
	}{{Options{Arms: 2, Rewards: &bounds}, ErrNoClip}, {Options{Clip: 5, Rewards: &bounds}, ErrArmsFromLog}} {
		r, err := Evaluate(opener(log), Always(0), c.o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Private(r, "ips", b, noise.NewFast(1)); !errors.Is(err, c.want) {
			t.Fatalf("options %+v: %v, want %v", c.o, err, c.want)
		}
	}
	nz := noise.NewFast(4)
	const m = 4000
	var mo moments
	var rel Release
	for range m {
		if rel, err = Private(res, "ips", b, nz); err != nil {
			t.Fatal(err)
		}
		mo.add(rel.Value - res.Estimate[1].Value)
	}
	sigma, _ := privacy.GaussianSigma(b, 5.0/200)
	if rel.Sensitivity != 5.0/200 || rel.Scale != sigma || rel.Mechanism != "gaussian" {
		t.Fatalf("release %+v, want sensitivity %v, sigma %v", rel, 5.0/200, sigma)
	}
	sd := math.Sqrt(mo.s / (mo.n - 1))
	if math.Abs(sd-sigma) > 4*sigma/math.Sqrt(2*m) || math.Abs(mo.mean()) > 4*sigma/math.Sqrt(m) {
		t.Fatalf("noise sd %v mean %v, want sd %v mean 0", sd, mo.mean(), sigma)
	}
	// Once per key.
	path := filepath.Join(t.TempDir(), "releases.json")
	var wg sync.WaitGroup
	vals := make([]float64, 8)
	draws := 0
	var mu sync.Mutex
	for i := range vals {
		wg.Go(func() {
			r, _, err := Ledger{Path: path}.ReleaseOnce("k", func() (Release, error) {
				mu.Lock()
				draws++
				mu.Unlock()
				return Private(res, "ips", b, noise.NewFast(uint64(i)))
			})
			if err != nil {
				t.Error(err)
			}
			vals[i] = r.Value
		})
	}
	wg.Wait()
	for _, v := range vals {
		if v != vals[0] {
			t.Fatalf("released values %v differ", vals)
		}
	}
	if draws != 1 {
		t.Fatalf("%d draws for one key", draws)
	}
	other, reused, err := Ledger{Path: path}.ReleaseOnce("k2", func() (Release, error) { return Private(res, "ips", b, noise.NewFast(99)) })
	if err != nil || reused || other.Value == vals[0] {
		t.Fatalf("another key: %v reused %v err %v", other.Value, reused, err)
	}
}

// Private SNIPS and DR: the sensitivities of Private's doc on [0, 1] and
// on [-1, 2]; SNIPS's two statistics carry independent noise of the
// calibrated sd (within 4 standard errors over 4000 releases) and its
// value is their ratio; DR's value minus DR computed event by event with
// the released model (an independent implementation of the formula) is
// noise of the calibrated sd, the model's means lie in the range, and
// its budget and the estimate's are halves of b; a pure budget uses
// Laplace and the L1 sensitivities; an unknown estimator is an error.
func TestPrivateSNIPSAndDR(t *testing.T) {
	w := world{mu: func(x float64, a int) float64 { return 0.3 + 0.4*float64(a)*x*x }, log0: func(x float64) float64 { return 0.5 + 0.3*x }}
	const n = 400
	log := w.write(noise.Stream(5), n)
	unit := mechanism.Unit
	o := Options{Arms: 2, Clip: 4, Rewards: &unit}
	res, err := Evaluate(opener(log), Uniform{}, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := privacy.NewZCDP(0.5)
	half, _ := privacy.Split(b, 2)
	const m = 4000
	nz := noise.NewFast(6)
	var s1, s0, ratio, dr moments
	for range m {
		rel, err := Private(res, "snips", b, nz)
		if err != nil {
			t.Fatal(err)
		}
		if want := 4 * math.Sqrt2 / n; rel.Sensitivity != want {
			t.Fatalf("snips sensitivity %v, want %v", rel.Sensitivity, want)
		}
		s1.add(rel.Released[0] - res.ipsSum/n)
		s0.add(rel.Released[1] - res.wSum/n)
		ratio.add(rel.Value - min(max(rel.Released[0]/rel.Released[1], 0), 1))
		if rel, err = Private(res, "dr", b, nz); err != nil {
			t.Fatal(err)
		}
		if want := (1 + 2*4.0) / n; rel.Sensitivity != want || rel.Model.Sensitivity != 2 || rel.Model.Budget != half || rel.Budget != b {
			t.Fatalf("dr release %+v model %+v", rel, rel.Model)
		}
		dr.add(rel.Value - drWith(t, log, rel.Model.Means, 4))
		for _, q := range rel.Model.Means {
			if q < 0 || q > 1 {
				t.Fatalf("model means %v outside [0, 1]", rel.Model.Means)
			}
		}
	}
	sigma, _ := privacy.GaussianSigma(b, 4*math.Sqrt2/n)
	sigmaDR, _ := privacy.GaussianSigma(half, 9.0/n)
	for _, c := range []struct {
		name  string
		mo    moments
		sigma float64
	}{{"snips weighted rewards", s1, sigma}, {"snips weights", s0, sigma}, {"dr", dr, sigmaDR}} {
		sd := math.Sqrt(c.mo.s / (c.mo.n - 1))
		if math.Abs(sd-c.sigma) > 4*c.sigma/math.Sqrt(2*m) || math.Abs(c.mo.mean()) > 4*c.sigma/math.Sqrt(m) {
			t.Errorf("%s: noise sd %v mean %v, want sd %v mean 0", c.name, sd, c.mo.mean(), c.sigma)
		}
	}
	if ratio.s != 0 || ratio.mean() != 0 {
		t.Errorf("snips value is not the clipped ratio of its statistics")
	}
	// Other ranges, pure eps.
	r := mechanism.Bounds{Lo: -1, Hi: 2}
	o2 := Options{Arms: 2, Clip: 4, Rewards: &r}
	res2, err := Evaluate(opener(log), Uniform{}, o2)
	if err != nil {
		t.Fatal(err)
	}
	pure, _ := privacy.NewPure(1)
	halfPure, _ := privacy.Split(pure, 2)
	for _, c := range []struct {
		est, mech string
		b         privacy.Budget
		sens      float64
		model     float64
	}{
		{"ips", "gaussian", b, 4 * 3.0 / n, 0},
		{"ips", "laplace", pure, 4 * 3.0 / n, 0},
		{"snips", "gaussian", b, 4 * 3.0 / n, 0},          // max(3, sqrt(5))
		{"snips", "laplace", pure, 4 * 3.0 / n, 0},        // max(3, 3)
		{"dr", "gaussian", b, 3 * 9.0 / n, math.Sqrt(10)}, // max(3, sqrt(2 * 5))
		{"dr", "laplace", pure, 3 * 9.0 / n, 6},           // max(3, 2 * 3)
	} {
		rel, err := Private(res2, c.est, c.b, nz)
		if err != nil {
			t.Fatal(err)
		}
		if rel.Mechanism != c.mech || rel.Sensitivity != c.sens {
			t.Errorf("%s %s: %s sensitivity %v, want %s %v", c.est, c.b, rel.Mechanism, rel.Sensitivity, c.mech, c.sens)
		}
		if c.est == "dr" && (rel.Model.Sensitivity != c.model || rel.Model.Mechanism != c.mech) {
			t.Errorf("dr %s: model %+v, want sensitivity %v", c.b, rel.Model, c.model)
		}
		if c.est == "dr" && c.b == pure && rel.Model.Budget != halfPure {
			t.Errorf("dr %s: model budget %v", c.b, rel.Model.Budget)
		}
	}
	if _, err := Private(res, "dm", b, nz); err == nil {
		t.Error("a private DM: no error")
	}
}

// drWith is DR with a fixed per-action model q and weights capped at
// clip, computed event by event from the log (uniform target, rewards in
// [0, 1]).
func drWith(t *testing.T, log []byte, q []float64, clip float64) float64 {
	t.Helper()
	sum, n := 0.0, 0
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		var e struct {
			Action int
			Reward float64
			PScore float64
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		pi := 1 / float64(len(q))
		dm := 0.0
		for _, qa := range q {
			dm += pi * qa
		}
		sum += dm + min(pi/e.PScore, clip)*(e.Reward-q[e.Action])
		n++
	}
	return sum / float64(n)
}

// A linear target policy: its distributions (greedy with ties split,
// softmax, eps-mixed; feature vectors and decision sets); shape and
// parse errors; and on a logged world, IPS and DR of the greedy policy
// (arm 0 when x > 0) within 4 standard errors of its true value.
func TestLinearPolicy(t *testing.T) {
	dir := t.TempDir()
	n := 0
	model := func(body string) string { // a file of its own: specs are built before use
		n++
		p := filepath.Join(dir, fmt.Sprintf("m%d.json", n))
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	p := make([]float64, 2)
	probs := func(spec string, e *Event) []float64 {
		t.Helper()
		pol, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := pol.Probs(e, p); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(p)
	}
	m := model(`[[1, 0], [-1, 0]]`)
	half := &Event{X: []float64{0.5}}
	e1 := math.Exp(1)
	for _, c := range []struct {
		spec string
		e    *Event
		want []float64
	}{
		{"linear:" + m, half, []float64{1, 0}},
		{"linear:" + m, &Event{X: []float64{0}}, []float64{0.5, 0.5}},
		{"linear:" + m + ",softmax=1", half, []float64{e1 / (e1 + 1), 1 / (e1 + 1)}},
		{"linear:" + m + ",eps=0.2", half, []float64{0.9, 0.1}},
		{"linear:" + model(`[[0.5, 2]]`), &Event{Actions: [][]float64{{1, 0}, {0, 1}}}, []float64{0, 1}},
		{"linear:" + model(`[[0.1], [0.3]]`), &Event{}, []float64{0, 1}},
	} {
		if got := probs(c.spec, c.e); math.Abs(got[0]-c.want[0]) > 1e-15 || math.Abs(got[1]-c.want[1]) > 1e-15 {
			t.Errorf("%s: %v, want %v", c.spec, got, c.want)
		}
	}
	for _, c := range []struct{ spec, want string }{
		{"linear:" + filepath.Join(dir, "none.json"), "no such file"},
		{"linear:" + model(`{"w": 1}`), "JSON array"},
		{"linear:" + model(`[]`), "no rows"},
		{"linear:" + model(`[[1, 2], [3]]`), "row 2"},
		{"linear:" + model(`[[1, 2]]`) + ",softmax=0", "softmax"},
		{"linear:" + model(`[[1, 2]]`) + ",eps=2", "eps"},
		{"linear:" + model(`[[1, 2]]`) + ",temp=2", "softmax=T"},
	} {
		if _, err := ParsePolicy(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.spec, err, c.want)
		}
	}
	for _, c := range []struct {
		body string
		e    *Event
		want string
	}{
		{`[[1, 0, 0], [1, 0, 0]]`, half, "needs 2"},
		{`[[1, 0]]`, half, "2 actions"},
		{`[[1, 0], [1, 0]]`, &Event{Actions: [][]float64{{1, 0}, {0, 1}}}, "one (theta)"},
		{`[[1e308, 1e308], [0, 0]]`, &Event{X: []float64{10}}, "+Inf"},
	} {
		pol, err := ParsePolicy("linear:" + model(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := pol.Probs(c.e, p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	// The greedy policy's value from a log.
	w := world{mu: func(x float64, a int) float64 { return 0.5 + 0.4*x*float64(1-2*a) }, log0: func(x float64) float64 { return 0.5 + 0.3*x }}
	truth := 0.0
	const grid = 100000
	for i := range grid {
		x := -1 + (2*float64(i)+1)/grid
		a := 1
		if x > 0 {
			a = 0
		}
		truth += w.mu(x, a) / grid
	}
	pol, _ := ParsePolicy("linear:" + model(`[[1, 0], [-1, 0]]`))
	res, err := Evaluate(opener(w.write(noise.Stream(8), 20000)), pol, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Estimate {
		if (e.Name == "ips" || e.Name == "dr") && math.Abs(e.Value-truth) > 4*e.SE {
			t.Errorf("%s %v (SE %v), true value %v", e.Name, e.Value, e.SE, truth)
		}
	}
}

// TestUnplayedTargetAndTinyLogs: a target the log never plays has an
// effective sample size of 0 (not 0/0), IPS 0 and no SNIPS; a log of one
// event has no standard errors; DM has no interval (its error from a
// wrong model is not in any SE). Undefined numbers are NaN in Go and
// null in JSON, which encodes every result.
func TestUnplayedTargetAndTinyLogs(t *testing.T) {
	log := []byte("action,reward,pscore\n0,1,0.5\n1,0,0.5\n0,1,0.5\n")
	res, err := Evaluate(opener(log), Always(2), Options{Arms: 3})
	if err != nil {
		t.Fatal(err)
	}
	est := map[string]Estimate{}
	for _, e := range res.Estimate {
		est[e.Name] = e
	}
	if res.ESS != 0 || est["ips"].Value != 0 || !math.IsNaN(est["snips"].Value) || !math.IsNaN(est["dm"].SE) {
		t.Errorf("never-played target: ESS %v, IPS %v, SNIPS %v, DM's SE %v; want 0, 0, NaN, NaN", res.ESS, est["ips"].Value, est["snips"].Value, est["dm"].SE)
	}
	one, err := Evaluate(opener([]byte("action,reward,pscore\n0,1,0.5\n")), Always(0), Options{Arms: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Result{res, one} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("JSON of %+v: %v", r, err)
		}
		if !bytes.Contains(b, []byte(`"se":null`)) {
			t.Errorf("JSON %s has no null standard error", b)
		}
	}
	if one.Estimate[1].Value != 2 || !math.IsNaN(one.Estimate[1].SE) {
		t.Errorf("one event: IPS %+v, want 2 without SE", one.Estimate[1])
	}
}

// TestUncoveredMass: the target's probability on actions the logging
// policy never takes (known from action_prob, or from a pscore of 1,
// which leaves the other actions none) is reported: IPS and DR cannot
// see those actions' rewards, whatever the effective sample size says.
func TestUncoveredMass(t *testing.T) {
	var one, probs, half strings.Builder
	one.WriteString("action,reward,pscore\n")
	for i := range 100 {
		fmt.Fprintf(&one, "0,%d,1\n", i%2)
		fmt.Fprintf(&probs, `{"action":0,"reward":%d,"pscore":1,"action_prob":[1,0,0]}`+"\n", i%2)
		fmt.Fprintf(&half, `{"action":%d,"reward":1,"pscore":0.5,"action_prob":[0.5,0.5,0]}`+"\n", i%2)
	}
	for _, c := range []struct {
		name string
		log  string
		pol  Policy
		want float64
	}{
		{"pscore 1, arm:1", one.String(), Always(1), 1},
		{"pscore 1, uniform", one.String(), Uniform{}, 2.0 / 3},
		{"pscore 1, arm:0", one.String(), Always(0), 0},
		{"action_prob, uniform", probs.String(), Uniform{}, 2.0 / 3},
		{"action_prob of two arms, uniform", half.String(), Uniform{}, 1.0 / 3},
		{"action_prob of two arms, arm:1", half.String(), Always(1), 0},
	} {
		res, err := Evaluate(opener([]byte(c.log)), c.pol, Options{Arms: 3})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Uncovered-c.want) > 1e-12 {
			t.Errorf("%s: uncovered mass %v, want %v", c.name, res.Uncovered, c.want)
		}
	}
}

// TestDMInterceptOnDecisionSets: on a log of decision sets whose reward
// is a constant plus noise (0.4 + N(0, 0.1^2), whatever the action), DM
// of uniform play is the constant, within 4 standard errors of the
// mean reward: the model of a decision set's actions has an intercept
// (without one, the constant is fit through the actions' vectors, and DM
// was near 0 on such a log).
func TestDMInterceptOnDecisionSets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var b bytes.Buffer
	const n = 2000
	for range n {
		set := make([][]float64, 3)
		for k := range set {
			set[k] = []float64{r.Float64() - 0.5, r.Float64() - 0.5}
		}
		js, _ := json.Marshal(set)
		fmt.Fprintf(&b, `{"action":%d,"reward":%v,"pscore":%v,"context":%s}`+"\n", r.IntN(3), 0.4+0.1*r.NormFloat64(), 1/3., js)
	}
	res, err := Evaluate(opener(b.Bytes()), Uniform{}, Options{Arms: 3})
	if err != nil {
		t.Fatal(err)
	}
	if dm := res.Estimate[0]; dm.Name != "dm" || math.Abs(dm.Value-0.4) > 4*0.1/math.Sqrt(n) {
		t.Errorf("DM %v of a constant reward 0.4 (4 standard errors: %v)", dm.Value, 4*0.1/math.Sqrt(n))
	}
}

// TestBadOptionsAndTargets: options and targets a program could pass by
// mistake are errors (*OptionError naming the field), never a panic or a
// silent default: a reward range with Lo > Hi (every reward was clipped
// and IPS printed 0 against a true 0.67), a negative or NaN cap (taken as
// no cap), a negative K or ridge, a target action outside [0, K), a nil
// target, a private release of nothing or on a source that cannot draw.
func TestBadOptionsAndTargets(t *testing.T) {
	log := opener([]byte(`{"action":0,"reward":1,"pscore":0.5}` + "\n" + `{"action":1,"reward":0,"pscore":0.5}` + "\n"))
	inverted := mechanism.Bounds{Lo: 1, Hi: 0}
	nan := mechanism.Bounds{Lo: math.NaN(), Hi: 1}
	for _, c := range []struct {
		field string
		o     Options
	}{
		{"rewards", Options{Arms: 2, Rewards: &inverted}},
		{"rewards", Options{Arms: 2, Rewards: &nan}},
		{"clip", Options{Arms: 2, Clip: -1}},
		{"clip", Options{Arms: 2, Clip: math.NaN()}},
		{"clip", Options{Arms: 2, Clip: math.Inf(1)}},
		{"arms", Options{Arms: -3}},
		{"lambda", Options{Arms: 2, Lambda: -1}},
		{"lambda", Options{Arms: 2, Lambda: math.NaN()}},
	} {
		var oe *OptionError
		if _, err := Evaluate(log, Uniform{}, c.o); !errors.As(err, &oe) || oe.Field != c.field {
			t.Errorf("%+v: %v, want an error on %s", c.o, err, c.field)
		}
	}
	for _, pol := range []Policy{Always(-1), Always(2), nil} {
		if _, err := Evaluate(log, pol, Options{Arms: 2}); err == nil {
			t.Errorf("target %#v accepted", pol)
		}
	}
	unit := mechanism.Unit
	res, err := Evaluate(log, Uniform{}, Options{Arms: 2, Clip: 5, Rewards: &unit})
	if err != nil {
		t.Fatal(err)
	}
	z, _ := privacy.NewZCDP(1)
	if _, err := Private(nil, "ips", z, noise.NewFast(1)); err == nil {
		t.Error("a release of a nil result accepted")
	}
	for _, nz := range []noise.Noise{nil, noise.Fast{}} {
		if _, err := Private(res, "snips", z, nz); !errors.Is(err, noise.ErrNoSource) {
			t.Errorf("a release on %#v: %v", nz, err)
		}
	}
}
