package experiment

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// goldenQuick holds a digest of every JSON and CSV file the quick
// reproduction writes (summary.json without its wall time), so that a
// refactoring that changes any pinned result fails the suite. After an
// intended change of results, rewrite it with
//
//	DPBANDIT_UPDATE_GOLDEN=1 go test -tags heavy ./experiment -run TestReproduceQuick
//
// and say why in the commit.
const goldenQuick = "testdata/quick-digests.txt"

// digests returns "path sha256" lines for the JSON and CSV files under dir.
func digests(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".csv")) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".json") {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			if b, err = json.Marshal(withoutWallTime(v)); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, fmt.Sprintf("%s %x", filepath.ToSlash(rel), sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// withoutWallTime drops every "wall_seconds" key, the one value of a
// result that depends on the machine.
func withoutWallTime(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "wall_seconds")
		for k, e := range x {
			x[k] = withoutWallTime(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutWallTime(e)
		}
	}
	return v
}

// checkGolden compares the quick reproduction in dir of the presets
// only (nil: all) with their lines of goldenQuick. Results are
// bit-identical on amd64, where the pins were made; other architectures
// may fuse multiply-adds and round differently.
func checkGolden(t *testing.T, dir string, only []string) {
	t.Helper()
	got := digests(t, dir)
	if os.Getenv("DPBANDIT_UPDATE_GOLDEN") != "" {
		if only != nil {
			t.Fatalf("the pins are rewritten from every preset: run with -tags heavy")
		}
		if err := os.WriteFile(goldenQuick, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOARCH != "amd64" {
		t.Logf("not comparing with %s on %s", goldenQuick, runtime.GOARCH)
		return
	}
	all, err := os.ReadFile(goldenQuick)
	if err != nil {
		t.Fatal(err)
	}
	want := string(all)
	if only != nil {
		var lines []string
		for _, l := range strings.SplitAfter(want, "\n") {
			if preset, _, _ := strings.Cut(l, "/"); slices.Contains(only, preset) {
				lines = append(lines, l)
			}
		}
		want = strings.Join(lines, "")
	}
	if got != want {
		wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
		for _, l := range gl {
			if !slices.Contains(wl, l) {
				t.Errorf("the quick reproduction changed: %s", l)
			}
		}
		t.Fatalf("pinned results changed (see %s to update them after an intended change)", goldenQuick)
	}
}

// TestMetricsNeedNoPlumbing: a per-run measure is one key of a
// sim.Record: averaged into summary.json under its own name (placed
// between episodes_mean and diff_vs), left out when some run lacks it,
// and carried by partial.json as it is.
func TestMetricsNeedNoPlumbing(t *testing.T) {
	recs := []sim.Record{
		{Regret: []float64{1}, Metrics: map[string]float64{"toy": 1, "partial": 5}},
		{Regret: []float64{2}, Metrics: map[string]float64{"toy": 3}},
	}
	m := metricMeans(recs)
	if len(m) != 1 || m["toy"] != 2 {
		t.Fatalf("metric means %v, want toy = 2 only", m)
	}
	r := Result{measured: measured{Algorithm: "a", EpisodesMean: 3}, Metrics: m, compared: compared{DiffVs: "b", WallSeconds: 1}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"episodes_mean":3,"toy":2,"diff_vs":"b"`) {
		t.Fatalf("summary entry %s", b)
	}
	var back PartialEntry
	pb, _ := json.Marshal(PartialEntry{Label: "a", Records: recs})
	if err := json.Unmarshal(pb, &back); err != nil || back.Records[0].Metrics["partial"] != 5 {
		t.Fatalf("partial round trip: %v %+v", err, back)
	}
}

// TestBoundsAreCappedAtTheMaximumRegret: no bound says more than T times
// the largest gap; the capped ones are named (001's lower bound at rho =
// 1e-300 is about 1.6e148 at T = 1000 before the cap).
func TestBoundsAreCappedAtTheMaximumRegret(t *testing.T) {
	z, _ := privacy.NewZCDP(1e-300)
	rows, err := Bounds(fig4Env, 1000, []privacy.Budget{z}, 4, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	most := 1000 * 0.5
	r := rows[0]
	for name, v := range map[string]*float64{"theorem10": r.Theorem10, "theorem11": r.Theorem11, "table2_converted": r.TableII,
		"theorem17_lower": r.Theorem17, "dpse_regret": &r.DPSERegret} {
		if v != nil && *v > most {
			t.Errorf("%s = %v above T x gap = %v", name, *v, most)
		}
	}
	if !slices.Contains(r.Capped, "theorem17_lower") {
		t.Errorf("capped %v: the lower bound is not named", r.Capped)
	}
}

// checkIntervals: no regret interval of a reproduction goes below 0 on
// an environment whose regret cannot be negative (every one but online
// learning's, whose regret against the best fixed point can be), and
// every parameter with named choices is written by its name.
func checkIntervals(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "summary.json" {
			return err
		}
		b, _ := os.ReadFile(path)
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		w, err := parseWorld(s.Env, 1)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, r := range s.Results {
			a, _ := catalog.Lookup(r.Algorithm)
			for k, v := range r.Params {
				if _, isName := v.(string); (a.Params[k].Choices != nil) != isName {
					t.Errorf("%s: %s's parameter %s is %v: choices are written by name, numbers as numbers", path, r.Label, k, v)
				}
			}
		}
		if lo, _ := w.regretRange(s.Horizon); lo < 0 {
			return nil
		}
		for _, r := range s.Results {
			if r.RegretCI95[0] < 0 {
				t.Errorf("%s: %s has a regret interval %v below 0", path, r.Label, r.RegretCI95)
			}
		}
		return nil
	})
}
