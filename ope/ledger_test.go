package ope

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// ledgerEstimate returns an estimate to release and a budget of rho = 0.1.
func ledgerEstimate(t *testing.T) (*Result, privacy.Budget) {
	t.Helper()
	w := world{mu: func(x float64, a int) float64 { return 0.5 }, log0: func(float64) float64 { return 0.5 }}
	log := w.write(noise.Stream(2), 200)
	unit := mechanism.Unit
	res, err := Evaluate(opener(log), Always(0), Options{Arms: 2, Clip: 5, Rewards: &unit})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := privacy.NewZCDP(0.1)
	return res, b
}

// A ledger's total: ten releases at rho = 0.1 fit a total of 1 and the
// eleventh is refused (OverTotalError with the numbers, nothing written);
// a recorded release is still returned (it spends nothing); the total is
// recorded in the file and binds a later caller that gives none; it may
// be lowered but not raised; a pure release costs eps^2/2 and DR's two
// halves add up to its budget; an (eps, delta) release on the discrete
// source costs privacy.ApproxToZCDP; a ledger written before totals (a JSON
// array) is read, its releases' costs computed from their mechanisms.
func TestLedgerTotal(t *testing.T) {
	res, b := ledgerEstimate(t)
	var err error
	draw := func(est string, b privacy.Budget) func() (Release, error) {
		return func() (Release, error) { return Private(res, est, b, noise.NewFast(1)) }
	}
	path := filepath.Join(t.TempDir(), "releases.json")
	l := Ledger{Path: path, Total: new(1.0)}
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for _, k := range keys {
		if _, _, err := l.ReleaseOnce(k, draw("ips", b)); err != nil {
			t.Fatalf("release %s: %v", k, err)
		}
	}
	before, _ := os.ReadFile(path)
	_, _, err = l.ReleaseOnce("k", draw("ips", b))
	var over *OverTotalError
	if !errors.As(err, &over) || over.Total != 1 || math.Abs(over.Spent-1) > 1e-9 || math.Abs(over.Cost-0.1) > 1e-9 {
		t.Fatalf("eleventh release: %v (%+v), want an OverTotalError spent 1 cost 0.1 total 1", err, over)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused release changed the ledger")
	}
	if _, reused, err := l.ReleaseOnce("c", draw("ips", b)); err != nil || !reused {
		t.Fatalf("a recorded release: reused %v, %v", reused, err)
	}
	// The recorded total binds a caller that gives none, and cannot be raised.
	if _, _, err := (Ledger{Path: path}).ReleaseOnce("k", draw("ips", b)); !errors.As(err, &over) {
		t.Fatalf("no total given: %v, want the recorded total to refuse", err)
	}
	if _, _, err := (Ledger{Path: path, Total: new(2.0)}).ReleaseOnce("k", draw("ips", b)); !errors.Is(err, ErrTotalRaised) {
		t.Fatalf("raised total: %v, want ErrTotalRaised", err)
	}
	st, err := Ledger{Path: path}.Read()
	if err != nil || st.Total == nil || *st.Total != 1 || st.Releases != 10 || math.Abs(st.Spent-1) > 1e-9 {
		t.Fatalf("state %+v, %v", st, err)
	}
	if _, _, err := (Ledger{Path: path, Total: new(0.5)}).ReleaseOnce("k", draw("ips", b)); !errors.As(err, &over) || over.Total != 0.5 {
		t.Fatalf("lowered total: %v", err)
	}
	if st, _ := (Ledger{Path: path}).Read(); st.Total == nil || *st.Total != 0.5 {
		t.Fatalf("lowered total not recorded: %+v", st)
	}
	// Below the total now, a recorded release is still read: it costs
	// nothing.
	if _, reused, err := (Ledger{Path: path}).ReleaseOnce("c", draw("ips", b)); err != nil || !reused {
		t.Fatalf("a recorded release under a lowered total: reused %v, %v", reused, err)
	}

	// Costs: pure eps-DP costs eps^2/2 (Laplace), DR's halves add up.
	pure, _ := privacy.NewPure(0.4)
	rel, err := Private(res, "snips", pure, noise.NewFast(2))
	if err != nil || math.Abs(rel.Rho()-0.08) > 1e-12 {
		t.Fatalf("pure eps = 0.4: rho %v (%v), want 0.08", rel.Rho(), err)
	}
	rel, err = Private(res, "dr", b, noise.NewFast(3))
	if err != nil || math.Abs(rel.Rho()-0.1) > 1e-12 || rel.Rho() > 0.1 {
		t.Fatalf("dr at rho 0.1: cost %v (%v), want at most 0.1 and within 1e-12", rel.Rho(), err)
	}

	// (eps, delta) on the discrete source is met through zCDP: the
	// Gaussian's rho is the conversion's (mechanism.NewGaussian).
	approx, _ := privacy.NewApprox(1, 1e-6)
	want, _ := privacy.ApproxToZCDP(1, 1e-6)
	for _, est := range []string{"ips", "dr"} {
		rel, err = Private(res, est, approx, noise.Secure{})
		if err != nil || math.Abs(rel.Rho()/want-1) > 1e-12 && est == "ips" || est == "dr" && rel.Rho() > want {
			t.Fatalf("%s at (1, 1e-6): rho %v (%v), want %v", est, rel.Rho(), err, want)
		}
	}

	// A ledger from before totals.
	old := filepath.Join(t.TempDir(), "old.json")
	rel, _ = Private(res, "ips", b, noise.NewFast(4))
	rel.Key = "x"
	data, _ := json.Marshal([]Release{rel})
	if err := os.WriteFile(old, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, reused, err := Ledger{Path: old, Total: new(0.15)}.ReleaseOnce("x", draw("ips", b))
	if err != nil || !reused || got.Value != rel.Value {
		t.Fatalf("old ledger: %v reused %v, %v; want %v", got.Value, reused, err, rel.Value)
	}
	if _, _, err := (Ledger{Path: old, Total: new(0.15)}).ReleaseOnce("y", draw("ips", b)); !errors.As(err, &over) || math.Abs(over.Spent-0.1) > 1e-9 {
		t.Fatalf("old ledger's spend: %v", err)
	}
}

// The releases of one run are recorded together or not at all: three new
// releases at rho = 0.1 do not fit a total of 0.25 and none is recorded
// (the error counts their summed cost); a run of two fits; a run that
// repeats a recorded key and a new one spends only the new one's cost;
// one key asked twice in a run is drawn once.
func TestLedgerReleasesAllOrNothing(t *testing.T) {
	res, b := ledgerEstimate(t)
	draws := 0
	req := func(key string) Request {
		return Request{Key: key, Draw: func() (Release, error) { draws++; return Private(res, "ips", b, noise.NewFast(uint64(draws))) }}
	}
	l := Ledger{Path: filepath.Join(t.TempDir(), "releases.json"), Total: new(0.25)}
	_, _, err := l.ReleaseAll([]Request{req("a"), req("b"), req("c")})
	var over *OverTotalError
	if !errors.As(err, &over) || over.Spent != 0 || math.Abs(over.Cost-0.3) > 1e-9 {
		t.Fatalf("three releases past the total: %v (%+v), want an OverTotalError spent 0 cost 0.3", err, over)
	}
	if st, err := l.Read(); err != nil || st.Releases != 0 || st.Total == nil || *st.Total != 0.25 {
		t.Fatalf("after a refused run: %+v, %v; want no release and the total recorded", st, err)
	}
	rels, reused, err := l.ReleaseAll([]Request{req("a"), req("b"), req("a")})
	if err != nil || len(rels) != 3 || reused[0] || reused[1] || !reused[2] || rels[2].Value != rels[0].Value {
		t.Fatalf("two releases, one asked twice: %v reused %v, %v", rels, reused, err)
	}
	before := draws
	rels2, reused, err := l.ReleaseAll([]Request{req("b"), req("c")})
	if !errors.As(err, &over) || math.Abs(over.Spent-0.2) > 1e-9 || math.Abs(over.Cost-0.1) > 1e-9 {
		t.Fatalf("a recorded and a new release past the total: %v %v %v", rels2, reused, err)
	}
	rels2, reused, err = l.ReleaseAll([]Request{req("b")})
	if err != nil || !reused[0] || rels2[0].Value != rels[1].Value || draws != before+1 {
		t.Fatalf("a recorded release: %v reused %v, %v (draws %d, want %d)", rels2, reused, err, draws, before+1)
	}
}

// A cap is a cap: a ledger file whose total_rho is 0 allows no release
// (the total is not "none"), and one whose total_rho is negative is
// refused (ErrTotal), as is a caller's negative or non-finite total;
// nothing is written on refusal.
func TestLedgerZeroTotalAllowsNothing(t *testing.T) {
	res, b := ledgerEstimate(t)
	draw := func() (Release, error) { return Private(res, "ips", b, noise.NewFast(1)) }
	dir := t.TempDir()
	for _, c := range []struct {
		file string
		want func(error) bool
	}{
		{`{"total_rho": 0, "releases": []}`, func(err error) bool { var over *OverTotalError; return errors.As(err, &over) && over.Total == 0 }},
		{`{"total_rho": -1, "releases": []}`, func(err error) bool { return errors.Is(err, ErrTotal) }},
	} {
		path := filepath.Join(dir, "releases.json")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := (Ledger{Path: path}).ReleaseOnce("k", draw); !c.want(err) {
			t.Errorf("ledger %s: %v", c.file, err)
		}
		if got, _ := os.ReadFile(path); string(got) != c.file {
			t.Errorf("ledger %s: rewritten as %s", c.file, got)
		}
		if _, err := (Ledger{Path: path}).Read(); c.file[14] == '-' && !errors.Is(err, ErrTotal) {
			t.Errorf("ledger %s: Read: %v, want ErrTotal", c.file, err)
		}
	}
	fresh := filepath.Join(dir, "fresh.json")
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, _, err := (Ledger{Path: fresh, Total: &bad}).ReleaseOnce("k", draw); !errors.Is(err, ErrTotal) {
			t.Errorf("total %v: %v, want ErrTotal", bad, err)
		}
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused total created its ledger")
	}
}
