package service

import (
	"context"
	"fmt"
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
