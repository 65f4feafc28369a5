// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
)

// splitInput is what the gymspans exporter gets from the gym processor for
// a recorded gymsim run: the batches the processor passed on, and a host
// whose gym processor factory created a processor (rollout_roots: auto
// takes the marked roots).
type splitInput struct {
	batches []ptrace.Traces
	spans   int
	host    factoryHost
}

var (
	splitOnce sync.Once
	splitIn   *splitInput
	splitErr  error
)

// processedForSplit runs the recording of recordForJoin through a gym
// processor once per process and keeps what it passes on.
func processedForSplit(b *testing.B) *splitInput {
	rec := recordForJoin(b)
	splitOnce.Do(func() {
		ctx := context.Background()
		f := gymprocessor.NewFactory()
		sink := new(consumertest.TracesSink)
		gym, err := f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), sink)
		if err != nil {
			splitErr = err
			return
		}
		host := factoryHost{Host: componenttest.NewNopHost(), gym: f}
		if splitErr = gym.Start(ctx, host); splitErr != nil {
			return
		}
		for _, body := range rec.bodies {
			req := ptraceotlp.NewExportRequest()
			if splitErr = req.UnmarshalProto(body); splitErr != nil {
				return
			}
			if splitErr = gym.ConsumeTraces(ctx, req.Traces()); splitErr != nil {
				return
			}
		}
		if splitErr = gym.Shutdown(ctx); splitErr != nil {
			return
		}
		batches := sink.AllTraces()
		liveTimes(batches)
		splitIn = &splitInput{batches: batches, spans: sink.SpanCount(), host: host}
	})
	require.NoError(b, splitErr)
	return splitIn
}

// liveTimes moves every span of batches by one offset so that the earliest
// starts an hour from now: to the exporters of the benchmark, started now,
// the run is live, as in a collector that started before Gym (spans older
// than the exporter take the restart rule's path, design §4.8).
func liveTimes(batches []ptrace.Traces) {
	earliest := pcommon.Timestamp(math.MaxUint64)
	each := func(f func(ptrace.Span)) {
		for _, td := range batches {
			for i := 0; i < td.ResourceSpans().Len(); i++ {
				sss := td.ResourceSpans().At(i).ScopeSpans()
				for j := 0; j < sss.Len(); j++ {
					spans := sss.At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						f(spans.At(k))
					}
				}
			}
		}
	}
	each(func(s ptrace.Span) { earliest = min(earliest, s.StartTimestamp()) })
	shift := pcommon.NewTimestampFromTime(time.Now().Add(time.Hour)) - earliest
	each(func(s ptrace.Span) {
		s.SetStartTimestamp(s.StartTimestamp() + shift)
		s.SetEndTimestamp(s.EndTimestamp() + shift)
	})
}

// BenchmarkTimeSplit is issue #37's cost of the time split (design §4.8):
// the gymspans exporter alone, at its defaults, with time_split on (on)
// and off (off), fed the batches a gym processor passed on for a recorded
// gymsim run (as BenchmarkCaptureJoin records it: GYMSIM_BIN or bin/gymsim,
// BENCH_JOIN_ROLLOUTS rollouts, default 3,000; its times moved to the
// future, liveTimes), by one caller or four at
// once, into a fresh dir of TMPDIR, then shut down (every file written).
// Each iteration runs both, in turn (off first in even iterations), and
// reports per span the process's CPU time (every goroutine, GC included)
// from the first batch to the end of the shutdown: on-cpu-ns/span,
// off-cpu-ns/span, on/off, the ratio of their sums, and
// on/off-pair-median, the median of the iterations' ratios (target: at most
// 1.05).
//
//	make build && TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkTimeSplit -benchtime 10x -count 3 ./bench
func BenchmarkTimeSplit(b *testing.B) {
	in := processedForSplit(b)
	for _, callers := range []int{1, 4} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			cpu, median := alternate(b, "time_split", [2]string{"off", "on"}, func(which int) time.Duration {
				return runSplitExporter(b, in, which == 1, callers)
			})
			perSpan := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*in.spans) }
			b.ReportMetric(perSpan(cpu[1]), "on-cpu-ns/span")
			b.ReportMetric(perSpan(cpu[0]), "off-cpu-ns/span")
			b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "on/off")
			b.ReportMetric(median, "on/off-pair-median")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// runSplitExporter feeds in to a new exporter and returns the CPU time it
// took.
func runSplitExporter(b *testing.B, in *splitInput, on bool, callers int) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "split-run-")
	require.NoError(b, err)
	defer os.RemoveAll(dir)
	f := gymspansexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*gymspansexporter.Config)
	cfg.CaptureDir, cfg.TimeSplit.Enabled = dir, on
	exp, err := f.CreateTraces(ctx, exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(b, err)
	require.NoError(b, exp.Start(ctx, in.host))

	b.StartTimer()
	before := processCPU()
	require.NoError(b, feed(callers, len(in.batches), func(i int) error { return exp.ConsumeTraces(ctx, in.batches[i]) }))
	require.NoError(b, exp.Shutdown(ctx))
	cpu := processCPU() - before
	b.StopTimer()

	// What is measured splits: with the split on, the rollouts' lines have
	// it; off, none has.
	raw, err := os.ReadFile(filepath.Join(dir, "rollouts.jsonl"))
	require.NoError(b, err)
	require.Equal(b, on, strings.Contains(string(raw), `"time_split_ms"`), "time_split on=%v", on)
	b.StartTimer()
	return cpu
}
