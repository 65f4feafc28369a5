// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"encoding/binary"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time (all threads, GC included): unlike
// wall time it does not grow while the machine runs something else.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nopOwner is an owner that keeps nothing: the core's own cost.
type nopOwner struct{}

func (nopOwner) Hold(Slot) int64               { return 100 }
func (nopOwner) TakeCopy(Slot) bool            { return false }
func (nopOwner) Arrived(*Node)                 {}
func (nopOwner) Decided(*Node, *Run) bool      { return false }
func (nopOwner) Rooted(*Node, *Run, bool) bool { return false }
func (nopOwner) Left(Departure)                {}

// BenchmarkCoreFastPath is Gym's common case through the core alone: a
// model server's SERVER span with its rollout in its URL and its two ASGI
// children, batch after batch, as the processor takes a batch (parents
// first), with the index at its steady size (entries expire after wait).
// ns/op is per span; it holds the index's work (the span's entry, its
// parent's, their expiry) and the events, not the spans' data.
func BenchmarkCoreFastPath(b *testing.B) {
	cfg := testConfig()
	c := New(cfg, nopOwner{})
	h := c.Hasher()
	const perBatch = 3 * 64
	facts := make([]Facts, perBatch)
	run := c.Run("run", "model", false)
	rollouts := make([]string, perBatch/3)
	for r := range rollouts {
		rollouts[r] = strconv.Itoa(r) + "-0"
	}
	now := int64(0)
	batch := func(i int) {
		now += int64(cfg.Wait) / 1000 // a thousand batches in wait: the index's steady state
		c.Begin(now)
		for r := 0; r < perBatch/3; r++ {
			var trace [16]byte
			binary.LittleEndian.PutUint64(trace[:], uint64(i/perBatch))
			binary.LittleEndian.PutUint64(trace[8:], uint64(r))
			server := Key{Trace: trace, Span: [8]byte{1}}
			client := [8]byte{9} // the agent's CLIENT span, in a later batch
			f := &facts[3*r]
			*f = Facts{Key: server, Hash: h.Hash(server), Parent: client, ParentHash: h.Hash(Key{Trace: trace, Span: client}),
				Evidence: rollouts[r], Node: NewNode()}
			c.Arrive(f, run)
			for k, id := range [][8]byte{{2}, {3}} {
				child := Key{Trace: trace, Span: id}
				f := &facts[3*r+1+k]
				*f = Facts{Key: child, Hash: h.Hash(child), Parent: server.Span, ParentHash: h.Hash(server), Node: NewNode()}
				c.Arrive(f, run)
			}
		}
		c.End()
	}
	for i := 0; i < 2000*perBatch; i += perBatch {
		batch(-1 - i) // warm up: the index at its steady size
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i += perBatch {
		batch(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/span")
	if c.Pending() != 0 {
		b.Fatalf("%d held: the fast path holds nothing", c.Pending())
	}
}
