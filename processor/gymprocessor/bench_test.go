// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
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
	"golang.org/x/sys/unix"
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

// countingSink counts the spans delivered to it and, once the count reaches
// the target set by expect (which may come after the spans), records when
// and closes done.
type countingSink struct {
	n      atomic.Int64
	target atomic.Int64
	once   sync.Once
	doneAt time.Time // written before done is closed
	done   chan struct{}
}

func newCountingSink() *countingSink { return &countingSink{done: make(chan struct{})} }

func (s *countingSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *countingSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.check(s.n.Add(int64(td.SpanCount())))
	return nil
}

func (s *countingSink) expect(total int64) {
	s.target.Store(total)
	s.check(s.n.Load())
}

func (s *countingSink) check(n int64) {
	if t := s.target.Load(); t > 0 && n >= t {
		s.once.Do(func() {
			s.doneAt = time.Now()
			close(s.done)
		})
	}
}

// streamTarget is one processor under test, fed by the stream benchmarks.
type streamTarget struct {
	sink *countingSink
	// consume hands one batch to the processor; callers may run it
	// concurrently.
	consume func(ptrace.Traces)
	// after runs after each batch on the caller's goroutine (gym: the fake
	// clock and the timer's tick).
	after func()
	// wait is how long the processor legitimately holds every span on the
	// wall clock (groupbytrace's wait_duration; the gym processor waits on
	// its fake clock, so 0).
	wait time.Duration
	// flush lets everything still held leave (gym: Shutdown, which takes
	// every pending decision; groupbytrace: nothing, its timers do it).
	flush func(b *testing.B)
	// stop stops the processor once everything was delivered.
	stop func(b *testing.B)
	// pin locks each feeding goroutine to its thread (for thread CPU time).
	pin bool
	// report, when set, reports metrics of its own for total spans fed.
	report func(b *testing.B, total int64)
}

// threadCPU is the CPU time of the calling thread: unlike wall time it does
// not grow while the machine runs something else.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// BenchmarkDefaultPresetStream feeds a realistic stream (defaultPresetStream:
// one job trace of 64 rollouts, 833 spans in 17 batches, per iteration, each
// iteration renumbered into a new job trace) to the gym processor and, on
// the same stream, to contrib groupbytrace with wait_duration 1s. The gym
// processor runs on a fake clock advanced 100ms per batch (10 batches/s of
// one job), its timer ticking at its real period, so settle passes within the
// stream; groupbytrace runs on the wall clock.
//
// ns/op is the time to feed one iteration: the timer stops when the last
// ConsumeTraces returned, so it holds no final wait. Then, untimed by the
// framework, everything still held is let out (gym: Shutdown; groupbytrace:
// its timers) and counted: every span fed must be delivered.
//
// Metrics:
//   - delivered-spans/s: spans fed / (end - start), where end is the later
//     of the last ConsumeTraces returning and the last span delivered minus
//     the processor's legitimate wait (groupbytrace's 1s; 0 for gym, whose
//     waits pass on the fake clock and whose final Shutdown flush counts).
//     So a processor is done when it took all input and let out all it holds
//     except what it must still hold; any lag behind its wait counts against
//     it. This favours groupbytrace when the feed is shorter than its wait:
//     its releases then run after the input stopped instead of competing
//     with it for CPU, as they would in a long-running collector. A claim
//     that gym delivers at least as much is therefore conservative.
//   - ingest-spans/s: spans fed / time callers spent inside ConsumeTraces,
//     summed over callers. gym does all its work (and the downstream call)
//     inside the call; groupbytrace only splits and queues there, its worker
//     and release goroutines do the rest: compare delivered-spans/s.
//   - cpu-ns/span and allocs/span: process CPU time (all goroutines, GC
//     included) and heap allocations from the start until the last span was
//     delivered, per span fed: every release is in.
//
// Everything includes preparing the batches (a CopyTo and renumbering, a
// stand-in for the receiver's unmarshalling); copy_only measures that alone.
// gym_locked is gym with its critical sections timed apart:
// locked-cpu-ns/span is the feeding thread's CPU time under the processor's
// lock per span, the serialized part of its work.
//
// The _4callers variants feed from 4 goroutines at once, each iteration a
// disjoint renumbered copy, as an OTLP receiver does with concurrent
// requests: there the work serialized under gym's lock, or on groupbytrace's
// single worker, bounds delivered-spans/s. With 4 callers the gym fake clock
// advances 25ms per batch, so each job still sees 10 batches/s.
func BenchmarkDefaultPresetStream(b *testing.B) {
	var gymAt func(callers int, storage bool, step time.Duration) func(*testing.B) *streamTarget
	stream := defaultPresetStream()
	perIter := int64(streamSpans(stream))

	copyOnly := func(*testing.B) *streamTarget {
		s := newCountingSink()
		return &streamTarget{
			sink:    s,
			consume: func(td ptrace.Traces) { _ = s.ConsumeTraces(context.Background(), td) },
			after:   func() {},
			flush:   func(*testing.B) {},
			stop:    func(*testing.B) {},
		}
	}

	gym := func(callers int, storage bool) func(*testing.B) *streamTarget {
		return gymAt(callers, storage, 100*time.Millisecond/time.Duration(callers))
	}
	gymAt = func(callers int, storage bool, step time.Duration) func(*testing.B) *streamTarget {
		return func(b *testing.B) *streamTarget {
			s := newCountingSink()
			cfg := testConfig()
			clk := newFakeClock()
			if storage {
				cfg.Storage = &storageID
			}
			p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), cfg, s, clk)
			require.NoError(b, err)
			if storage {
				// file_storage as the shipped configs have it, in the
				// benchmark's temp dir (TMPDIR: on tmpfs, or on a disk).
				ext := newFileStorage(b, b.TempDir())
				require.NoError(b, p.startStorage(context.Background(), storageHost{Host: componenttest.NewNopHost(), ext: ext}))
				b.Cleanup(func() { _ = ext.Shutdown(context.Background()) })
			}
			perTick := int64(tickPeriod(cfg.Settle) / step)
			var batches atomic.Int64
			return &streamTarget{
				sink:    s,
				consume: func(td ptrace.Traces) { _ = p.ConsumeTraces(context.Background(), td) },
				after: func() {
					clk.Advance(step)
					if batches.Add(1)%perTick == 0 {
						p.tick(context.Background()) // the timer's period, as in a collector
						p.checkpointIfDue(context.Background())
					}
				},
				flush: func(b *testing.B) { require.NoError(b, p.Shutdown(context.Background())) },
				stop:  func(*testing.B) {},
			}
		}
	}

	// gymLocked is gym with what ConsumeTraces and the timer do under the
	// processor's lock timed apart, in the feeding thread's CPU time: the
	// work serialized across callers, which bounds what concurrent callers
	// get through. It calls the processor's own critical sections
	// (consumeLocked, flushLocked) between the steps ConsumeTraces and tick
	// take around them.
	gymLocked := func(b *testing.B) *streamTarget {
		s := newCountingSink()
		cfg := testConfig()
		clk := newFakeClock()
		p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), cfg, s, clk)
		require.NoError(b, err)
		step := 100 * time.Millisecond
		perTick := int64(tickPeriod(cfg.Settle) / step)
		var batches int64
		var locked time.Duration
		ctx := context.Background()
		return &streamTarget{
			sink: s,
			consume: func(td ptrace.Traces) {
				f := p.eng.prepare(td)
				t0 := threadCPU()
				r, g, seq, ok, err := p.consumeLocked(ctx, td, f, nil)
				locked += threadCPU() - t0
				require.True(b, ok)
				require.NoError(b, err)
				settled := p.deliver(ctx, r, g, seq)
				p.delivered(ctx, seq, r, settled)
				f.release()
			},
			after: func() {
				clk.Advance(step)
				if batches++; batches%perTick == 0 {
					t0 := threadCPU()
					r, g, seq, ok := p.flushLocked(ctx)
					locked += threadCPU() - t0
					require.True(b, ok)
					settled := p.deliver(ctx, r, g, seq)
					p.delivered(ctx, seq, r, settled)
				}
			},
			flush: func(b *testing.B) { require.NoError(b, p.Shutdown(context.Background())) },
			stop:  func(*testing.B) {},
			pin:   true,
			report: func(b *testing.B, total int64) {
				b.ReportMetric(float64(locked.Nanoseconds())/float64(total), "locked-cpu-ns/span")
			},
		}
	}

	groupbytrace := func(b *testing.B) *streamTarget {
		s := newCountingSink()
		f := groupbytraceprocessor.NewFactory()
		cfg := f.CreateDefaultConfig().(*groupbytraceprocessor.Config)
		cfg.WaitDuration = time.Second
		p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, s)
		require.NoError(b, err)
		require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
		return &streamTarget{
			sink:    s,
			consume: func(td ptrace.Traces) { _ = p.ConsumeTraces(context.Background(), td) },
			after:   func() {},
			wait:    cfg.WaitDuration,
			flush:   func(*testing.B) {},
			stop:    func(b *testing.B) { require.NoError(b, p.Shutdown(context.Background())) },
		}
	}

	run := func(b *testing.B, callers int, setup func(*testing.B) *streamTarget) {
		b.ReportAllocs()
		t := setup(b)
		var next atomic.Int64 // iterations taken; each one a new job trace
		var inside atomic.Int64
		runtime.GC()
		cpu0, m0 := cpuNow(), mallocs()
		start := time.Now()
		b.ResetTimer()
		var wg sync.WaitGroup
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if t.pin {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					for _, td := range stream {
						c := renumber(td, uint64(i))
						t0 := time.Now()
						t.consume(c)
						inside.Add(int64(time.Since(t0)))
						t.after()
					}
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		consumed := time.Now()

		total := int64(b.N) * perIter
		t.sink.expect(total)
		t.flush(b)
		select {
		case <-t.sink.done:
		case <-time.After(time.Minute + t.wait):
			b.Fatalf("delivered %d of %d spans", t.sink.n.Load(), total)
		}
		cpu, m := cpuNow()-cpu0, mallocs()-m0
		t.stop(b)
		require.Equal(b, total, t.sink.n.Load(), "spans delivered")

		elapsed := max(consumed.Sub(start), t.sink.doneAt.Sub(start)-t.wait)
		b.ReportMetric(float64(total)/elapsed.Seconds(), "delivered-spans/s")
		b.ReportMetric(float64(total)/time.Duration(inside.Load()).Seconds(), "ingest-spans/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(total), "cpu-ns/span")
		b.ReportMetric(float64(m)/float64(total), "allocs/span")
		if t.report != nil {
			t.report(b, total)
		}
	}

	b.Run("copy_only", func(b *testing.B) { run(b, 1, copyOnly) })
	b.Run("gym", func(b *testing.B) { run(b, 1, gym(1, false)) })
	// The index at a production size: 5 ms a batch of the fake clock is
	// about 13,000 spans a second, so the spans left within wait keep
	// about 400,000 index entries (100 ms a batch: about 20,000).
	b.Run("gym_busy", func(b *testing.B) { run(b, 1, gymAt(1, false, 5*time.Millisecond)) })
	b.Run("gym_storage", func(b *testing.B) { run(b, 1, gym(1, true)) })
	b.Run("groupbytrace", func(b *testing.B) { run(b, 1, groupbytrace) })
	b.Run("gym_locked", func(b *testing.B) { run(b, 1, gymLocked) })
	b.Run("copy_only_4callers", func(b *testing.B) { run(b, 4, copyOnly) })
	b.Run("gym_4callers", func(b *testing.B) { run(b, 4, gym(4, false)) })
	b.Run("gym_storage_4callers", func(b *testing.B) { run(b, 4, gym(4, true)) })
	b.Run("groupbytrace_4callers", func(b *testing.B) { run(b, 4, groupbytrace) })
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
		runtime.GC()
		retained := heapInUse() - base
		p.mu.Lock()
		pending := p.eng.core.Pending()
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

// BenchmarkPrepare is what the processor reads of a batch before its lock
// (prepare): evidence, ids, index hashes, the repair's facts, a node per
// span; ns/op is per span of the default-preset stream.
func BenchmarkPrepare(b *testing.B) {
	e, err := newEngine(testConfig())
	require.NoError(b, err)
	stream := defaultPresetStream()
	n := streamSpans(stream)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNow()
	for i := 0; i < b.N; i += n {
		for _, td := range stream {
			e.prepare(td).release()
		}
	}
	b.ReportMetric(float64((cpuNow()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/span")
}
