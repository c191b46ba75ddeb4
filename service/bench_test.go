package service

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// BenchmarkHTTPDecisionReward measures decision+reward pairs through the
// HTTP API on SQLite (the file in /dev/shm when there is one), with
// parallel clients: one op is one pair.
func BenchmarkHTTPDecisionReward(b *testing.B) {
	h := start(b, storetest.SQLite(b), Config{})
	h.create(storetest.BernoulliSpec("e", 5, 0.5))
	var n atomic.Int64
	c := h.http.Client()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ev := fmt.Sprint(n.Add(1))
			if code, body := post(c, h.http.URL+"/v1/experiments/e/decisions", map[string]string{"event_id": ev, "unit_id": ev}); code != 200 {
				b.Fatalf("%d %s", code, body)
			}
			if code, body := post(c, h.http.URL+"/v1/experiments/e/rewards", map[string]any{"event_id": ev, "reward": 1}); code != 200 {
				b.Fatalf("%d %s", code, body)
			}
		}
	})
}

// BenchmarkEngineDecisionReward measures the engine alone (no HTTP, no
// JSON): a decision and its reward, committed in groups.
func BenchmarkEngineDecisionReward(b *testing.B) {
	h := start(b, storetest.SQLite(b), Config{})
	h.create(storetest.BernoulliSpec("e", 5, 0.5))
	x, _ := h.srv.Get("default", "e")
	b.ResetTimer()
	pairs(b, h, x, 0, b.N, strconv.Itoa, one)
}

// pairs takes the decisions of events from to to-1 (event id i, unit
// unit(i)) and their rewards (reward(i)) through the engine, and waits
// until they are durable.
func pairs(b *testing.B, h *harness, x *engine.Experiment, from, to int, unit func(int) string, reward func(int) float64) {
	var last chan struct{}
	for i := from; i < to; i++ {
		ev := strconv.Itoa(i)
		if _, _, err := x.StartDecide(ev, unit(i), "", nil); err != nil {
			b.Fatal(err)
		}
		_, d, err := x.StartReward(ev, reward(i))
		if err != nil {
			b.Fatal(err)
		}
		last = d
	}
	if last != nil {
		h.srv.w.Wait(context.Background(), last)
	}
}

func one(int) float64 { return 1 }

// BenchmarkMemoryFlat drives 10^6 decision+reward pairs through the
// engine on SQLite and PostgreSQL and reports the Go heap in use (after
// a collection) at 10^5 and at 10^6 pairs, the largest of its values at
// every 10^5 pairs between, and the heap bytes each pair beyond 10^5
// added: settled events leave memory, units' counts are a bounded cache
// (which fills and halves, so the heap swings within its bound), and the
// id filter has a fixed size. With a new unit per event ("units=all")
// the unit caches fill; with 1000 units they do not. outsideB/pair is
// the growth of the process's memory outside the Go runtime's (RSS less
// what the runtime holds: SQLite's caches), per pair beyond 10^5;
// rssMB@1e5 and rssMB@1e6 the process's resident memory (the test
// binary's: one benchmark at a time, -bench 'MemoryFlat/sqlite/units=all').
// Run with -bench MemoryFlat -benchtime 1x.
func BenchmarkMemoryFlat(b *testing.B) {
	for _, st := range []struct {
		name  string
		dsn   func(testing.TB) string
		units int
	}{{"sqlite/units=all", storetest.SQLite, 0}, {"sqlite/units=1000", storetest.SQLite, 1000}, {"postgres/units=all", storetest.Postgres, 0}, {"postgres/units=1000", storetest.Postgres, 1000}} {
		b.Run(st.name, func(b *testing.B) {
			for range b.N {
				h := start(b, st.dsn(b), Config{})
				h.create(storetest.BernoulliSpec("e", 5, 0.5))
				x, _ := h.srv.Get("default", "e")
				heap := func() float64 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					return float64(m.HeapInuse)
				}
				unit := strconv.Itoa
				if st.units > 0 {
					unit = func(i int) string { return strconv.Itoa(i % st.units) }
				}
				rss := func() float64 { // the process's resident memory, from /proc (Linux)
					st, _ := os.ReadFile("/proc/self/status")
					var kb float64
					for _, line := range strings.Split(string(st), "\n") {
						if strings.HasPrefix(line, "VmRSS:") {
							fmt.Sscan(strings.TrimPrefix(line, "VmRSS:"), &kb)
						}
					}
					return kb * 1024
				}
				outside := func() float64 { // RSS outside the Go runtime's memory
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					return rss() - float64(m.Sys-m.HeapReleased)
				}
				pairs(b, h, x, 0, 1e5, unit, one)
				at1e5, out1e5, rss1e5 := heap(), outside(), rss()
				most, at1e6 := at1e5, 0.0
				for n := 1e5; n < 1e6; n += 1e5 {
					pairs(b, h, x, int(n), int(n+1e5), unit, one)
					at1e6 = heap()
					most = max(most, at1e6)
				}
				b.ReportMetric(at1e5/1e6, "heapMB@1e5")
				b.ReportMetric(at1e6/1e6, "heapMB@1e6")
				b.ReportMetric(most/1e6, "heapMBmax")
				b.ReportMetric(rss1e5/1e6, "rssMB@1e5")
				b.ReportMetric(rss()/1e6, "rssMB@1e6")
				b.ReportMetric((outside()-out1e5)/9e5, "outsideB/pair")
				b.ReportMetric((at1e6-at1e5)/9e5, "heapB/pair")
			}
		})
	}
}

// BenchmarkRestart drives n decision+reward pairs through the engine on
// SQLite (a new unit per event), stops as a crash would (no snapshot at
// close: the tail since the last periodic one is replayed), and reports
// the time a new server takes to load the experiment and the operations
// it replayed. Run one size at a time, by hand:
// -bench 'Restart/pairs=1e7' -benchtime 1x (about 3 minutes to fill).
func BenchmarkRestart(b *testing.B) {
	for _, n := range []int{1e5, 1e6, 1e7} {
		b.Run(fmt.Sprintf("pairs=1e%d", int(math.Log10(float64(n)))), func(b *testing.B) {
			for range b.N {
				h := start(b, storetest.SQLite(b), Config{})
				h.create(storetest.BernoulliSpec("e", 5, 0.5))
				x, _ := h.srv.Get("default", "e")
				pairs(b, h, x, 0, n, strconv.Itoa, func(i int) float64 { return float64(i % 2) })
				h.crash() // the writes are done, nothing is saved or folded at close
				b.ResetTimer()
				t0 := time.Now()
				h.open()
				b.ReportMetric(time.Since(t0).Seconds(), "restart-s")
				x, _ = h.srv.Get("default", "e")
				ops, replayed, _ := x.Loaded()
				b.ReportMetric(float64(replayed), "replayed-ops")
				if ops != int64(2*n) {
					b.Fatalf("restored %d operations of %d", ops, 2*n)
				}
			}
		})
	}
}
