package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/sim"
)

// withoutWall drops the wall-clock fields, the one thing a merge may
// change.
func withoutWall(b []byte) []byte {
	return regexp.MustCompile(`(?m)^\s*"wall_seconds": .*\n`).ReplaceAll(b, nil)
}

// TestShardsMergeToTheUnshardedRun: for a bandit, a contextual and an
// online-learning experiment, three shards merged give summary.json and
// regret.csv identical to the unsharded run's (bar wall_seconds);
// a missing, duplicated or foreign shard is refused with an error naming
// it.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Env: "bernoulli:0.7,0.5,0.3", Algos: []string{"adac-ucb", "ucb-doubling"}, Rho: []float64{0.1, 1}, Horizon: 100000, Runs: 10},
		{Env: "contextual-gauss:k=5,d=3", Algos: []string{"adac-oful", "rs-oful"}, Rho: []float64{1}, Horizon: 2000, Runs: 5},
		{Env: "experts-iid:n=5", Algos: []string{"dp-ftrl-experts", "hedge"}, Eps: []float64{1}, Horizon: 2000, Runs: 7},
	} {
		d := Defaults()
		c.Seed, c.Checkpoints, c.Mode, c.Noise, c.MaxMemory = 3, 20, d.Mode, d.Noise, d.MaxMemory
		dir := t.TempDir()
		full := filepath.Join(dir, "full")
		if _, err := Run(context.Background(), c, Options{Out: full}); err != nil {
			t.Fatal(err)
		}
		var shards []string
		for i := range 3 {
			s := filepath.Join(dir, fmt.Sprint("s", i))
			rep, err := Run(context.Background(), c, Options{Out: s, Shard: sim.Shard{Index: i, Count: 3}})
			if err != nil {
				t.Fatal(err)
			}
			if want := (sim.Shard{Index: i, Count: 3}).Size(c.Runs); rep.Summary.Runs != want {
				t.Errorf("%s shard %d: %d runs, want %d", c.Env, i, rep.Summary.Runs, want)
			}
			shards = append(shards, s)
		}
		merged := filepath.Join(dir, "merged")
		if _, err := Merge(shards, merged, nil); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"summary.json", "regret.csv"} {
			a, _ := os.ReadFile(filepath.Join(full, f))
			b, _ := os.ReadFile(filepath.Join(merged, f))
			if len(a) == 0 || !bytes.Equal(withoutWall(a), withoutWall(b)) {
				t.Errorf("%s: merged %s differs from the unsharded one", c.Env, f)
			}
		}
		for _, bad := range []struct {
			dirs []string
			want string
		}{
			{shards[:2], "missing shard 2/3"},
			{append([]string{shards[0]}, shards...), "given twice"},
			{[]string{shards[0], shards[1], full}, "partial.json"},
		} {
			if _, err := Merge(bad.dirs, filepath.Join(dir, "bad"), nil); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: merge of %v: %v, want an error naming %q", c.Env, bad.dirs, err, bad.want)
			}
		}
	}
}

// TestShardOfAnotherExperimentIsRefused: shards of two configurations
// do not merge.
func TestShardOfAnotherExperimentIsRefused(t *testing.T) {
	c := Defaults()
	c.Env, c.Algos, c.Horizon, c.Runs = "bernoulli:0.7,0.5", []string{"ucb1"}, 1000, 4
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, err := Run(context.Background(), c, Options{Out: a, Shard: sim.Shard{Index: 0, Count: 2}}); err != nil {
		t.Fatal(err)
	}
	c.Seed = 2
	if _, err := Run(context.Background(), c, Options{Out: b, Shard: sim.Shard{Index: 1, Count: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{a, b}, filepath.Join(dir, "m"), nil); err == nil || !strings.Contains(err.Error(), "different experiments") {
		t.Errorf("shards of two experiments merged: %v", err)
	}
	if _, err := Run(context.Background(), c, Options{Out: a, Shard: sim.Shard{Index: 0, Count: 5}}); err == nil {
		t.Error("more shards than runs accepted")
	}
}

// TestShardFromEnv reads Kubernetes and Slurm indices.
func TestShardFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		get   func(string) string
		count int
		want  sim.Shard
		err   string
	}{
		{env("JOB_COMPLETION_INDEX", "2"), 4, sim.Shard{Index: 2, Count: 4}, ""},
		{env("JOB_COMPLETION_INDEX", "1", "DPBANDIT_SHARDS", "3"), 0, sim.Shard{Index: 1, Count: 3}, ""},
		{env("JOB_COMPLETION_INDEX", "1"), 0, sim.Shard{}, "--shards"},
		{env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "8"), 0, sim.Shard{Index: 4, Count: 8}, ""},
		{env("SLURM_ARRAY_TASK_ID", "0"), 0, sim.Shard{}, "SLURM_ARRAY_TASK_COUNT"},
		{env(), 0, sim.Shard{}, "JOB_COMPLETION_INDEX"},
		{env("JOB_COMPLETION_INDEX", "4"), 4, sim.Shard{}, "0 <= I < N"},
	} {
		got, err := ShardFromEnv(c.get, c.count)
		if c.err == "" && (err != nil || got != c.want) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("got %v, %v; want %v, %q", got, err, c.want, c.err)
		}
	}
	for _, s := range []string{"1/0", "3/3", "-1/2", "x", "1/2/3"} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("shard %q accepted", s)
		}
	}
}

// TestShardedReproductionMerges: a reproduction of one preset with
// parts (robust, one folder per alpha), run in two shards, merges; the
// merge draws its combined plots from its own parts only (it ran the
// sparse combiner on robust's reports and panicked: found by a
// stranger's trial).
func TestShardedReproductionMerges(t *testing.T) {
	if !heavy {
		t.Skip("runs a preset twice (2 s): with the build tag heavy, as CI does")
	}
	dir := t.TempDir()
	for i := range 2 {
		sh := sim.Shard{Index: i, Count: 2}
		if _, err := Reproduce(context.Background(), ReproduceOptions{Scale: Quick, Out: filepath.Join(dir, ShardDir(sh)), Only: []string{"robust"}, Shard: sh}); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	m, err := Merge([]string{dir}, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Reports) != 4 {
		t.Fatalf("%d reports merged, want robust's 4 parts", len(m.Reports))
	}
	if _, err := os.Stat(filepath.Join(out, "robust", "regret-vs-alpha.svg")); err != nil {
		t.Errorf("the combined plot: %v", err)
	}
}
