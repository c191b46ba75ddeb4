//go:build heavy

package main

import "testing"

// TestWholeWorkloadChecksum pins the checksum the program prints (about
// 2 s of work, so only under -tags heavy).
func TestWholeWorkloadChecksum(t *testing.T) {
	const want uint64 = 0x18534670ba471e4a
	if got := workload(); got != want {
		t.Fatalf("workload checksum %016x, want %016x: bench/unit defines U and must not change", got, want)
	}
}
