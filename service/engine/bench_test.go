package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// The engine's per-request paths on the in-memory store (no SQL, no
// HTTP, no JSON), folding as on SQLite, a new unit per event as dpbandit loadtest does, after
// 10^4 warm pairs: a decision (BenchmarkDecision: its rewards come in
// blocks of 256 with the timer stopped) and a reward (BenchmarkReward:
// the decisions come so). Allocations per op are the measure of
// progress; the store's commits run on the writer's goroutine, which
// -benchmem counts too.

// benchBlock is the events decided (or rewarded) outside the timer at a
// time.
const benchBlock = 256

// benchExperiment returns a warm AdaC-UCB experiment on memstore and the
// next free event number.
func benchExperiment(b *testing.B) (*engine.Experiment, *enginetest.Harness, int) {
	h := enginetest.Start(b, enginetest.MemDSN, enginetest.Config{})
	h.Env.Eager = false // folds every foldEvery operations, as on SQLite
	h.Create(storetest.BernoulliSpec("e", 5, 0.5))
	x := h.Get("e")
	// As the service does at its start: ids and units not in memory are
	// then not looked up in the store.
	h.Env.Ledger.Load(context.Background())
	x.LoadIDs(context.Background())
	const warm = 10000
	for i := range warm {
		benchDecide(b, x, i)
		benchReward(b, x, i)
	}
	return x, h, warm
}

func benchDecide(b *testing.B, x *engine.Experiment, i int) {
	ev := strconv.Itoa(i)
	if _, _, err := x.StartDecide(ev, "u"+ev, "", nil); err != nil {
		b.Fatal(err)
	}
}

func benchReward(b *testing.B, x *engine.Experiment, i int) chan struct{} {
	_, d, err := x.StartReward(strconv.Itoa(i), float64(i&1))
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkDecision(b *testing.B) {
	x, h, next := benchExperiment(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchDecide(b, x, next+i)
		if (i+1)%benchBlock == 0 || i == b.N-1 {
			b.StopTimer()
			var last chan struct{}
			for j := i - i%benchBlock; j <= i; j++ {
				last = benchReward(b, x, next+j)
			}
			h.Writer.Wait(context.Background(), last)
			b.StartTimer()
		}
	}
}

func BenchmarkReward(b *testing.B) {
	x, h, next := benchExperiment(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%benchBlock == 0 {
			b.StopTimer()
			for j := i; j < i+benchBlock && j < b.N; j++ {
				benchDecide(b, x, next+j)
			}
			b.StartTimer()
		}
		d := benchReward(b, x, next+i)
		if i == b.N-1 {
			h.Writer.Wait(context.Background(), d)
		}
	}
}
