// Command unit is the machine's unit of time, U, for every timing the
// project states in U (docs/performance.md#the-unit-u).
//
// It runs a fixed workload that has nothing to do with the project: a
// loop of integer and floating-point arithmetic over a xorshift stream,
// then a sort of a fixed pseudo-random slice of float64, on one
// goroutine. It prints the workload's checksum and its wall time; U is
// that wall time. A timing divided by U compares across revisions of the
// project and, roughly, across machines, because nothing in the project
// makes this program faster.
//
// This program must never be changed, tuned or optimised, and nothing in
// the project may call it or share code with it: an edit redefines U and
// breaks every timing stated in it. TestWorkloadChecksum pins the
// checksum so that an edit to the workload is noticed. Only a new Go
// toolchain can move it (its compiler and its sort); the program prints
// the toolchain's version with the time.
//
// Usage:
//
//	go build -o /tmp/unit ./bench/unit && /tmp/unit
package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"time"
)

// The workload's fixed sizes. Never change them.
const (
	arithSteps = 300_000_000
	sortLen    = 10_000_000
	seed       = 0x9E3779B97F4A7C15
)

// xorshift advances a 64-bit xorshift generator (Marsaglia 2003, the
// 13/7/17 triple).
func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// arith runs the fixed arithmetic loop and returns its checksum.
func arith(n int) uint64 {
	x := uint64(seed)
	var acc uint64
	f := 1.0
	for i := 0; i < n; i++ {
		x = xorshift(x)
		acc += x>>32 ^ acc<<3
		// A float step whose result depends on the stream: kept in
		// [1, 2) so that it never overflows or denormalises.
		f = f*1.0000001 + float64(x>>40)*1e-16
		if f >= 2 {
			f = math.Sqrt(f)
		}
	}
	return acc ^ math.Float64bits(f)
}

// sorted sorts a fixed pseudo-random slice of n float64 and returns a
// checksum of the sorted order.
func sorted(n int) uint64 {
	x := uint64(seed) ^ 0xD1B54A32D192ED03
	v := make([]float64, n)
	for i := range v {
		x = xorshift(x)
		v[i] = float64(x>>11) / (1 << 53)
	}
	slices.Sort(v)
	var h uint64
	for i := 0; i < n; i += 1 + n/1024 {
		h = h*1099511628211 ^ math.Float64bits(v[i])
	}
	return h
}

// workload runs the whole fixed workload and returns its checksum.
func workload() uint64 {
	return arith(arithSteps) ^ sorted(sortLen)
}

func main() {
	start := time.Now()
	sum := workload()
	wall := time.Since(start)
	_, err := fmt.Printf("U workload: checksum %016x, wall %.3f s (%s %s/%s)\n",
		sum, wall.Seconds(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if err != nil {
		os.Exit(1)
	}
}
