// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// window is what one measured run of a paired benchmark cost: the process's
// user and system CPU time (every goroutine, the GC's included), the bytes
// it allocated on the heap, and the garbage collections that started in it.
type window struct {
	user, sys time.Duration
	alloc     uint64
	gcs       uint64
}

func (w window) cpu() time.Duration { return w.user + w.sys }

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
	var before, after syscall.Rusage
	b.StartTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	f()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	b.StopTimer()
	metrics.Read(samples)
	return window{
		user:  time.Duration(after.Utime.Nano() - before.Utime.Nano()),
		sys:   time.Duration(after.Stime.Nano() - before.Stime.Nano()),
		alloc: samples[0].Value.Uint64() - alloc,
		gcs:   samples[1].Value.Uint64() - gcs,
	}
}
