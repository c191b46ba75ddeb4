package catalog

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestEntries: names are unique; each algorithm has exactly the
// constructor of its kind; every counterpart is a non-private algorithm
// of the same kind; online learners name their decision set.
func TestEntries(t *testing.T) {
	byName := map[string]Algorithm{}
	for _, a := range All() {
		if _, dup := byName[a.Name]; dup {
			t.Errorf("%s is in the catalogue twice", a.Name)
		}
		byName[a.Name] = a
		set := map[Kind]bool{Finite: a.Policy != nil, Linear: a.Policy != nil, Robust: a.Batched != nil,
			Contextual: a.Contextual != nil, Sparse: a.Contextual != nil, Online: a.Learner != nil}
		n := 0
		for _, c := range []bool{a.Policy != nil, a.Batched != nil, a.Contextual != nil, a.Learner != nil} {
			if c {
				n++
			}
		}
		if n != 1 || !set[a.Kind] {
			t.Errorf("%s (%s) has %d constructors, or not its kind's", a.Name, a.Kind, n)
		}
		if a.Kind == Online && a.Set == "" {
			t.Errorf("%s names no decision set", a.Name)
		}
		if a.Private && a.Summary == "" {
			t.Errorf("%s has no summary", a.Name)
		}
	}
	for _, a := range byName {
		if a.Counterpart == "" || a.Counterpart == a.Name {
			continue
		}
		c, ok := byName[a.Counterpart]
		if !ok || c.Private || c.Kind != a.Kind {
			t.Errorf("%s's counterpart %q: present %v, private %v, kind %s", a.Name, a.Counterpart, ok, c.Private, c.Kind)
		}
	}
}

// TestGeneratedCounterpart: a generated counterpart is its private
// algorithm's constructor at privacy.None(): the same plans, decision
// for decision, on the same rewards.
func TestGeneratedCounterpart(t *testing.T) {
	pub, err := Parse("ucb-doubling:beta=2")
	if err != nil {
		t.Fatal(err)
	}
	if pub.Private || pub.Counterpart != "" {
		t.Fatalf("ucb-doubling: private %v, counterpart %q", pub.Private, pub.Counterpart)
	}
	if a, _ := Lookup("adac-ucb"); a.Counterpart != "ucb-doubling" {
		t.Fatalf("adac-ucb's counterpart is %q", a.Counterpart)
	}
	priv, _ := Parse("adac-ucb:beta=2")
	s := bandit.Setting{Arms: 3, Horizon: 1000, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: noise.NewFast(1)}
	p1, err := pub.NewPolicy(privacy.None(), s)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := priv.Policy(priv.Args(), privacy.None(), s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		a, b := p1.Next(), p2.Next()
		if a != b {
			t.Fatalf("plan %d: %+v vs %+v", i, a, b)
		}
		fb := bandit.Feedback{Arm: a.Arm, Count: a.Count, Sum: float64(a.Count) * float64(a.Arm) / 3}
		if err := p1.Update(fb); err != nil {
			t.Fatal(err)
		}
		if err := p2.Update(fb); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParseErrors: typed errors for unknown names and bad parameters.
func TestParseErrors(t *testing.T) {
	if _, err := Parse("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: %v", err)
	}
	for _, bad := range []string{"adac-ucb:beta", "adac-ucb:beta=0", "adac-ucb:beta=1:beta=2", "adac-ucb:gamma=1", "ucb1:c=1", "robust-ae:model=m3"} {
		if _, err := Parse(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	long := "adac-ucb:beta=" + strings.Repeat("9", 100000)
	if _, err := Parse(long); err == nil || len(err.Error()) > 300 {
		t.Errorf("a 100 kB spec's error has %d bytes", len(err.Error()))
	}
	a, _ := Parse("adac-oful")
	if _, err := a.NewPolicy(privacy.None(), bandit.Setting{}); !errors.Is(err, ErrKind) {
		t.Errorf("a contextual algorithm built as a bandit policy: %v", err)
	}
}

// TestLocalBudgetPerClient: the randomisers are eps-DP in one reward; an
// M2 client holds every reward of its action, at most ceil(q^i) in each
// batch i = 1..B-1 (q = T^(1/B)): at T = 10^4, B = 4, q is
// 10.000000000000002 in floating point as the policy computes it, so
// 11 + 101 + 1001 = 1113 rewards, 1113 eps over the run; with unit=client
// the eps given is the client's and each reward gets eps/1113. M1's client
// holds one reward: the two agree.
func TestLocalBudgetPerClient(t *testing.T) {
	eps := privacy.Budget{Notion: privacy.Pure, Eps: 1.5}
	for _, c := range []struct {
		spec         string
		report, clnt float64
	}{
		{"robust-ae:model=m2:batches=4", 1.5, 1.5 * 1113},
		{"robust-ae:model=m2:batches=4:unit=client", 1.5 / 1113, 1.5},
		{"batched-ae:model=m2:batches=2:unit=client", 0.015, 1.5},
		{"robust-ae:model=m1:batches=4", 1.5, 0},
		{"robust-ae:model=m1:batches=4:unit=client", 1.5, 0},
	} {
		s, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.LocalBudget(eps, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if b.Notion != privacy.LDP || math.Abs(b.Eps-c.report) > 1e-12*c.report || b.Eps > c.report || math.Abs(b.Client-c.clnt) > 1e-12*c.clnt || b.Client < c.clnt {
			t.Errorf("%s: %+v, want eps %v per reward, %v per client", c.spec, b, c.report, c.clnt)
		}
		if c.clnt > 0 && !strings.Contains(b.String(), "client=") {
			t.Errorf("%s: %q does not show the per-client eps", c.spec, b)
		}
	}
}

// TestPointsDistinct: the parameter points the privacy checks visit are
// distinct algorithms (an edge that is its parameter's default would be
// the defaults' point again, audited twice), and the first is the
// defaults.
func TestPointsDistinct(t *testing.T) {
	for _, a := range All() {
		seen := map[string]bool{}
		for i, p := range a.Points() {
			s, err := Parse(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if seen[s.Identity] {
				t.Errorf("%s: point %s is %s again", a.Name, p, s.Identity)
			}
			seen[s.Identity] = true
			if i == 0 && s.Identity != a.Name {
				t.Errorf("%s: first point %s is not the defaults", a.Name, p)
			}
		}
	}
}

// TestTooManyArms: an arm count whose per-arm state cannot be allocated
// (2^40 arms: AdaC-UCB died of running out of memory) is refused with
// ErrTooManyArms, for the plans and the batched policies alike; MaxArms
// arms are accepted up to the constructor.
func TestTooManyArms(t *testing.T) {
	st := bandit.Setting{Arms: 1 << 40, Horizon: 1000, Bounds: mechanism.Unit, Noise: noise.NewFast(1), Rand: noise.Stream(1)}
	rho, err := privacy.NewZCDP(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"adac-ucb", "ucb1", "dp-se", "robust-ae"} {
		s, err := Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Batched != nil {
			_, err = s.NewBatched(privacy.None(), st)
		} else {
			_, err = s.NewPolicy(rho, st)
		}
		if !errors.Is(err, ErrTooManyArms) {
			t.Errorf("%s with 2^40 arms: %v, want ErrTooManyArms", name, err)
		}
	}
	ok := st
	ok.Arms = MaxArms
	s, _ := Parse("ucb1")
	if _, err := s.NewPolicy(privacy.None(), ok); errors.Is(err, ErrTooManyArms) {
		t.Errorf("MaxArms arms: %v", err)
	}
}

// TestScaledEntry: adac-oful-scaled is AdaC-OFUL with its radius times
// beta (default 0.3) and beta = 0 its greedy choice: on the same noise
// and rewards, beta = 1 makes adac-oful's choices, and the default's
// choices differ from them (the scale reaches the choice); beta = 0
// chooses argmax <theta~, a>.
func TestScaledEntry(t *testing.T) {
	rho, _ := privacy.NewZCDP(1)
	run := func(spec string) ([]int, contextual.Policy) {
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.NewContextual(rho, contextual.Setting{Dim: 3, Horizon: 2000, Bounds: mechanism.Unit, Noise: noise.NewFast(5)})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 5))
		var out []int
		for range 2000 {
			acts := make([][]float64, 4)
			for i := range acts {
				acts[i] = []float64{r.Float64() - 0.5, r.Float64() - 0.5, r.Float64() - 0.5}
			}
			k, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
			if spec == "adac-oful-scaled:beta=0" {
				g, err := p.(contextual.Concurrent).Greedy(acts)
				if err != nil || g != k {
					t.Fatalf("beta = 0 chose %d, the greedy choice is %d (%v)", k, g, err)
				}
			}
			if err := p.Update(min(1, max(0, acts[k][0]+0.5))); err != nil {
				t.Fatal(err)
			}
		}
		return out, p
	}
	base, _ := run("adac-oful")
	one, _ := run("adac-oful-scaled:beta=1")
	def, _ := run("adac-oful-scaled")
	run("adac-oful-scaled:beta=0")
	if !slices.Equal(base, one) {
		t.Error("adac-oful-scaled:beta=1 does not choose as adac-oful")
	}
	if slices.Equal(base, def) {
		t.Error("adac-oful-scaled at beta = 0.3 chooses as adac-oful")
	}
	if s, _ := Parse("adac-oful-scaled"); s.Values["beta"] != 0.3 || !s.Private || !s.Gaussian {
		t.Errorf("adac-oful-scaled: %+v", s.Values)
	}
}
