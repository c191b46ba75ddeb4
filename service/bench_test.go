package service

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkHTTPDecisionReward measures decision+reward pairs through the
// HTTP API on SQLite (the file in /dev/shm when there is one), with
// parallel clients: one op is one pair.
func BenchmarkHTTPDecisionReward(b *testing.B) {
	h := start(b, sqliteDSN(b), Config{})
	h.create(bernoulliSpec("e", 5, 0.5))
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
	h := start(b, sqliteDSN(b), Config{})
	h.create(bernoulliSpec("e", 5, 0.5))
	l, _ := h.srv.get("default", "e")
	var last chan struct{}
	b.ResetTimer()
	for i := range b.N {
		ev := fmt.Sprint(i)
		if _, _, err := h.srv.startDecide(l, ev, ev, "", nil); err != nil {
			b.Fatal(err)
		}
		_, d, err := h.srv.startReward(l, ev, 1)
		if err != nil {
			b.Fatal(err)
		}
		last = d
	}
	h.srv.w.wait(context.Background(), last)
}

// BenchmarkMemoryFlat drives 10^6 decision+reward pairs through the
// engine on SQLite and PostgreSQL and reports the Go heap in use (after
// a collection) at 10^5 and at 10^6 pairs, and the heap bytes each pair
// beyond 10^5 added: settled events leave memory (only an id filter of a
// few bytes an event stays). With a new unit per event ("units=all") the
// per-unit counts (contribution limit, ledger totals for the cap) still
// grow with the units; with 1000 units they do not. Run with
// -bench MemoryFlat -benchtime 1x.
func BenchmarkMemoryFlat(b *testing.B) {
	for _, st := range []struct {
		name  string
		dsn   func(testing.TB) string
		units int
	}{{"sqlite/units=all", sqliteDSN, 0}, {"sqlite/units=1000", sqliteDSN, 1000}, {"postgres/units=all", postgresDSN, 0}, {"postgres/units=1000", postgresDSN, 1000}} {
		b.Run(st.name, func(b *testing.B) {
			for range b.N {
				h := start(b, st.dsn(b), Config{})
				h.create(bernoulliSpec("e", 5, 0.5))
				l, _ := h.srv.get("default", "e")
				heap := func() float64 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					return float64(m.HeapInuse)
				}
				var last chan struct{}
				var at1e5 float64
				for i := range 1000000 {
					ev, unit := fmt.Sprint(i), fmt.Sprint(i)
					if st.units > 0 {
						unit = fmt.Sprint(i % st.units)
					}
					if _, _, err := h.srv.startDecide(l, ev, unit, "", nil); err != nil {
						b.Fatal(err)
					}
					_, d, err := h.srv.startReward(l, ev, 1)
					if err != nil {
						b.Fatal(err)
					}
					last = d
					if i == 99999 || i == 999999 {
						h.srv.w.wait(context.Background(), last)
						if i == 99999 {
							at1e5 = heap()
						}
					}
				}
				at1e6 := heap()
				b.ReportMetric(at1e5/1e6, "heapMB@1e5")
				b.ReportMetric(at1e6/1e6, "heapMB@1e6")
				b.ReportMetric((at1e6-at1e5)/9e5, "heapB/pair")
			}
		})
	}
}
