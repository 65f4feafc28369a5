// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
)

const (
	benchRollouts = 64 // per job trace
	benchWindow   = 16 // rollouts per SDK batch export
)

// defaultPresetStream draws one e2e evaluation in Gym's default preset: one
// job trace, batches exported children first by each of the four processes
// (model and resources servers, agent, orchestrator), the job span last.
func defaultPresetStream() []ptrace.Traces {
	var out []ptrace.Traces
	for w := 0; w < benchRollouts; w += benchWindow {
		var spans []sdef
		for r := w; r < w+benchWindow; r++ {
			spans = append(spans, rolloutSpans(fmt.Sprintf("%d-0", r), rolloutOpts{obs: true, hParent: "job", trace: "job"})...)
		}
		for _, p := range []string{"model", "resources", "agent", "orchestrator"} {
			var mine []sdef
			for _, s := range spans {
				if s.proc == p {
					mine = append(mine, s)
				}
			}
			out = append(out, buildTraces(gymProcs, procOrder, mine))
		}
	}
	return append(out, buildTraces(gymProcs, procOrder, []sdef{jobSpan("job")}))
}

func streamSpans(stream []ptrace.Traces) int {
	n := 0
	for _, td := range stream {
		n += td.SpanCount()
	}
	return n
}

// renumber copies a batch with every trace and span id xored with iteration
// i, so each iteration is a new job trace with new spans.
func renumber(td ptrace.Traces, i uint64) ptrace.Traces {
	c := ptrace.NewTraces()
	td.CopyTo(c)
	rss := c.ResourceSpans()
	for a := 0; a < rss.Len(); a++ {
		sss := rss.At(a).ScopeSpans()
		for b := 0; b < sss.Len(); b++ {
			spans := sss.At(b).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				tid := s.TraceID()
				binary.LittleEndian.PutUint64(tid[8:], binary.LittleEndian.Uint64(tid[8:])^i)
				s.SetTraceID(tid)
				s.SetSpanID(xorSpan(s.SpanID(), i))
				if !s.ParentSpanID().IsEmpty() {
					s.SetParentSpanID(xorSpan(s.ParentSpanID(), i))
				}
			}
		}
	}
	return c
}

func xorSpan(id pcommon.SpanID, i uint64) pcommon.SpanID {
	binary.LittleEndian.PutUint64(id[:], binary.LittleEndian.Uint64(id[:])^(i<<20))
	return id
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// countingSink counts spans and says when it has seen a target.
type countingSink struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func (s *countingSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *countingSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	if s.n.Add(int64(td.SpanCount())) == s.target {
		close(s.done)
	}
	return nil
}

// BenchmarkDefaultPresetStream feeds the same realistic stream to the gym
// processor (fake clock advanced 100ms per batch, the timer ticking at its
// real period, so settle passes within the stream) and to contrib groupbytrace (wait_duration 1s). Per span it
// reports ingest throughput, CPU (all goroutines, until every span reached
// the sink) and allocations; copy_only is the cost of preparing the batches,
// included in both.
func BenchmarkDefaultPresetStream(b *testing.B) {
	stream := defaultPresetStream()
	perIter := streamSpans(stream)

	// consume is timed as ingest (what the caller of ConsumeTraces waits
	// for); after runs untimed but inside the CPU and allocation counts: it
	// stands for the work a collector does on the processor's own goroutine
	// (the gym timer; groupbytrace does its work on its worker goroutine).
	run := func(b *testing.B, consume, after func(ptrace.Traces), drain func(total int64)) {
		b.ReportAllocs()
		var ingest time.Duration
		runtime.GC()
		cpu0, m0 := cpuNow(), mallocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, td := range stream {
				c := renumber(td, uint64(i+1))
				t0 := time.Now()
				consume(c)
				ingest += time.Since(t0)
				after(c)
			}
		}
		total := int64(b.N * perIter)
		drain(total)
		b.StopTimer()
		cpu, m := cpuNow()-cpu0, mallocs()-m0
		b.ReportMetric(float64(total)/ingest.Seconds(), "ingest-spans/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(total), "cpu-ns/span")
		b.ReportMetric(float64(m)/float64(total), "allocs/span")
	}

	b.Run("copy_only", func(b *testing.B) {
		run(b, func(ptrace.Traces) {}, func(ptrace.Traces) {}, func(int64) {})
	})

	b.Run("gym", func(b *testing.B) {
		sink := &countingSink{done: make(chan struct{})}
		clk := newFakeClock()
		set := processortest.NewNopSettings(componentType)
		p, err := newGymProcessorWithClock(set, testConfig(), sink, clk)
		require.NoError(b, err)
		sink.target = int64(b.N * perIter)
		batches := 0
		period := tickPeriod(testConfig().Settle)
		run(b, func(td ptrace.Traces) {
			_ = p.ConsumeTraces(context.Background(), td)
		}, func(ptrace.Traces) {
			clk.Advance(100 * time.Millisecond) // 10 batches/s of fake time
			if batches++; time.Duration(batches)*100*time.Millisecond%period == 0 {
				p.tick(context.Background()) // the timer's period, as in a collector
			}
		}, func(total int64) {
			require.NoError(b, p.Shutdown(context.Background()))
			require.Equal(b, total, sink.n.Load())
		})
	})

	b.Run("groupbytrace", func(b *testing.B) {
		sink := &countingSink{done: make(chan struct{})}
		sink.target = int64(b.N * perIter)
		f := groupbytraceprocessor.NewFactory()
		cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
		cfg.WaitDuration = time.Second
		p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
		require.NoError(b, err)
		require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
		run(b, func(td ptrace.Traces) {
			_ = p.ConsumeTraces(context.Background(), td)
		}, func(ptrace.Traces) {}, func(int64) {
			select {
			case <-sink.done:
			case <-time.After(time.Minute):
				b.Fatalf("groupbytrace released %d of %d spans", sink.n.Load(), sink.target)
			}
		})
		require.NoError(b, p.Shutdown(context.Background()))
	})
}

// BenchmarkRetainedPerPendingSpan holds default-preset spans undecided and
// reports the heap they retain per span, and the part of it that is the
// processor's own (index, pending store, origins) over the span data itself.
func BenchmarkRetainedPerPendingSpan(b *testing.B) {
	const windows = 64
	var stream []ptrace.Traces
	for w := 0; w < windows; w++ {
		var spans []sdef
		for r := 0; r < benchWindow; r++ {
			for _, s := range rolloutSpans(fmt.Sprintf("%d-%d", w, r), rolloutOpts{obs: true, hParent: "job", trace: fmt.Sprintf("job-%d", w)}) {
				if s.proc == "agent" || s.proc == "orchestrator" {
					if s.attrs["nemo.gym.rollout.id"] == nil {
						spans = append(spans, s) // POST /run and its ASGI children, HTTP POST: all wait for settle
					}
				}
			}
		}
		stream = append(stream, buildTraces(gymProcs, procOrder, spans))
	}
	for i := 0; i < b.N; i++ {
		runtime.GC()
		base := heapInUse()
		held := make([]ptrace.Traces, len(stream))
		for k, td := range stream {
			held[k] = copyTraces(td)
		}
		n := streamSpans(held)
		runtime.GC()
		dataOnly := heapInUse() - base // the batches as they arrive

		p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), testConfig(), consumertest.NewNop(), newFakeClock())
		require.NoError(b, err)
		for _, td := range held {
			require.NoError(b, p.ConsumeTraces(context.Background(), td))
		}
		held = nil
		runtime.GC()
		retained := heapInUse() - base
		p.mu.Lock()
		pending := len(p.eng.heap)
		p.mu.Unlock()
		require.Equal(b, n, pending)
		b.ReportMetric(float64(retained)/float64(pending), "retained-B/pending-span")
		b.ReportMetric(float64(retained-dataOnly)/float64(pending), "overhead-B/pending-span")
		runtime.KeepAlive(p)
		_ = processor.Traces(p)
	}
}

func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
