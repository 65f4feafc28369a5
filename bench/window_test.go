// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// window is what one measured run of a paired benchmark cost: the process's
// CPU time (every goroutine, the GC's included), the bytes it allocated on
// the heap, and the garbage collections that started in it.
type window struct {
	cpu       time.Duration
	user, sys time.Duration
	alloc     uint64
	gcs       uint64
}

// measure runs f as a measured window: after a collection that is not
// measured, so that the benchmark's own heap (its input, hundreds of MB)
// is not marked in some windows and not in others. A collection marks all
// of it, ~1/6 of a run's CPU on the time split's input; one came about
// once a run, in either arm of a pair, four times the effect measured.
// What a run allocates is reported instead (alloc), and a collection that
// starts in the window anyway is counted (gcs) and measured.
func measure(b *testing.B, f func()) window {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	alloc, gcs := samples[0].Value.Uint64(), samples[1].Value.Uint64()
	b.StartTimer()
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	before := processCPU()
	f()
	cpu := processCPU() - before
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	b.StopTimer()
	metrics.Read(samples)
	return window{cpu: cpu, user: time.Duration(r1.Utime.Nano() - r0.Utime.Nano()), sys: time.Duration(r1.Stime.Nano() - r0.Stime.Nano()), alloc: samples[0].Value.Uint64() - alloc, gcs: samples[1].Value.Uint64() - gcs}
}

// processCPU is the process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
