package main

import "testing"

// TestWorkloadIsFixed pins the workload that defines U, quickly: its
// sizes and seed, and the checksum of both parts at small sizes. It
// fails when the workload is edited, an edit that redefines U and must
// not be made. It times nothing. The checksum of the whole workload is
// pinned by TestWholeWorkloadChecksum (-tags heavy).
func TestWorkloadIsFixed(t *testing.T) {
	if arithSteps != 300_000_000 || sortLen != 10_000_000 || seed != 0x9E3779B97F4A7C15 {
		t.Fatalf("sizes %d, %d and seed %x changed: bench/unit defines U and must not change", arithSteps, sortLen, uint64(seed))
	}
	const want uint64 = 0x9382884ef8930aed
	if got := arith(1_000_000) ^ sorted(100_000); got != want {
		t.Fatalf("small workload checksum %016x, want %016x: bench/unit defines U and must not change", got, want)
	}
}

// TestWorkloadPartsCount checks that each part of the workload feeds
// the checksum: a part whose result were dropped could be removed by
// the compiler, and U would no longer time it.
func TestWorkloadPartsCount(t *testing.T) {
	if arith(1000) == arith(1001) {
		t.Error("arith ignores its last step")
	}
	if sorted(1000) == sorted(1001) {
		t.Error("sorted ignores its length")
	}
}
