package ope

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkEvaluateAll evaluates four targets (uniform, always action
// 1, the logging policy, a linear softmax) with all four estimators on
// a log of the service's export (2-dimensional contexts, 3 actions,
// action_prob, ids and times), 10^5 records a run; ns/record is the
// whole evaluation's time a record.
func BenchmarkEvaluateAll(b *testing.B) {
	const n = 100000
	log := genLog("vector", n, 1)
	model := filepath.Join(b.TempDir(), "vec.json")
	if err := os.WriteFile(model, []byte(`[[0.5,-0.2,0.1],[-0.3,0.4,0],[0.1,0.1,0.2]]`), 0o644); err != nil {
		b.Fatal(err)
	}
	var pols []Policy
	for _, s := range []string{"uniform", "arm:1", "logging", "linear:" + model + ",softmax=0.5"} {
		p, err := ParsePolicy(s)
		if err != nil {
			b.Fatal(err)
		}
		pols = append(pols, p)
	}
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EvaluateAll(opener(log), pols, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

// TestWriteBenchLog writes the benchmark's log of $DPBANDIT_BENCH_RECORDS
// records to $DPBANDIT_BENCH_LOG (skipped without them): the file that
// docs/performance.md times `dpbandit evaluate` and Python's json on;
// $DPBANDIT_BENCH_KIND names another shape of genLog's (sets, none,
// csv).
func TestWriteBenchLog(t *testing.T) {
	path, n := os.Getenv("DPBANDIT_BENCH_LOG"), os.Getenv("DPBANDIT_BENCH_RECORDS")
	if path == "" || n == "" {
		t.Skip("DPBANDIT_BENCH_LOG and DPBANDIT_BENCH_RECORDS not set")
	}
	records, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	kind := os.Getenv("DPBANDIT_BENCH_KIND")
	if kind == "" {
		kind = "vector"
	}
	if err := os.WriteFile(path, genLog(kind, records, 1), 0o644); err != nil {
		t.Fatal(err)
	}
}
