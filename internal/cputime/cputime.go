// Package cputime reads the process's CPU time for benchmarks: a figure
// per operation in CPU nanoseconds ("cpu-ns/op") is inflated less than
// the wall time when other work shares the machine (a benchmark
// descheduled for a while counts that while in its wall time, not in its
// CPU time), which makes runs on a busy machine comparable.
package cputime

import "testing"

// Start returns the process's CPU time so far, in nanoseconds (0 where
// the system does not tell).
func Start() int64 { return now() }

// Report adds the CPU time per operation since start to b's results, as
// cpu-ns/op (nothing where the system does not tell the CPU time). The
// process's other goroutines count too: call it from benchmarks that run
// alone.
func Report(b *testing.B, start int64) {
	if start == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(now()-start)/float64(b.N), "cpu-ns/op")
}
