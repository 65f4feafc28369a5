// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"fmt"
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
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
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
	// again is the same run with other rollout ids and span ids
	// (anotherRun): what a warm exporter is fed after batches.
	again []ptrace.Traces
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
		liveTimes(batches, time.Hour)
		splitIn = &splitInput{batches: batches, spans: sink.SpanCount(), host: host, again: anotherRun(batches)}
	})
	require.NoError(b, splitErr)
	return splitIn
}

// anotherRun copies batches as a second run of the same shape: every
// rollout id gets a prefix and every span id (parents too) another value,
// so that to an exporter that wrote batches each span and rollout is new.
func anotherRun(batches []ptrace.Traces) []ptrace.Traces {
	out := make([]ptrace.Traces, len(batches))
	for i, td := range batches {
		out[i] = ptrace.NewTraces()
		td.CopyTo(out[i])
	}
	other := func(id pcommon.SpanID) pcommon.SpanID {
		if !id.IsEmpty() {
			id[0] ^= 0x5a
		}
		return id
	}
	prefix := func(m pcommon.Map) {
		if v, ok := m.Get(gymconv.RolloutAttribute); ok && v.Type() == pcommon.ValueTypeStr {
			v.SetStr("again-" + v.Str())
		}
	}
	eachResource(out, prefix, func(s ptrace.Span) {
		s.SetSpanID(other(s.SpanID()))
		s.SetParentSpanID(other(s.ParentSpanID()))
		prefix(s.Attributes())
	})
	return out
}

// BenchmarkTimeSplit is issue #37's cost of the time split (design §4.8):
// the gymspans exporter alone, at its defaults, with time_split on (on)
// and off (off), fed the batches a gym processor passed on for a recorded
// gymsim run (as BenchmarkCaptureJoin records it: GYMSIM_BIN or bin/gymsim,
// BENCH_JOIN_ROLLOUTS rollouts, default 3,000; its times moved to the
// future, liveTimes), by one caller or four at once, into a fresh dir of
// TMPDIR, then shut down (every file written).
//
// exporter=fresh measures a new exporter fed the run: its first run, every
// table and pool growing from empty. exporter=warm measures an exporter
// that has written the run already (not measured) fed a second run of the
// same shape (anotherRun): a collector's steady state, its tables at their
// peak. Each iteration runs both on and off, in turn (off first in even
// iterations), and reports per span the process's CPU time (every
// goroutine, GC included) from the first batch measured, after a collection
// not measured (measure), to the end of the shutdown: on-cpu-ns/span,
// off-cpu-ns/span, on/off, the ratio of their sums, and
// on/off-pair-median, the median of the iterations' ratios (target: at
// most 1.05).
//
//	make build && TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkTimeSplit -benchtime 10x -count 3 ./bench
func BenchmarkTimeSplit(b *testing.B) {
	in := processedForSplit(b)
	for _, warm := range []bool{false, true} {
		for _, callers := range []int{1, 4} {
			name := fmt.Sprintf("exporter=fresh/callers=%d", callers)
			if warm {
				name = fmt.Sprintf("exporter=warm/callers=%d", callers)
			}
			b.Run(name, func(b *testing.B) {
				alternate(b, "time_split", [2]string{"off", "on"}, in.spans, func(which int) window {
					return runSplitExporter(b, in, which == 1, callers, warm)
				})
			})
		}
	}
}

// runSplitExporter feeds in to a new exporter and returns what it cost;
// warm, it feeds in.batches first, unmeasured, and measures in.again.
func runSplitExporter(b *testing.B, in *splitInput, on bool, callers int, warm bool) window {
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
	batches := in.batches
	if warm {
		require.NoError(b, feed(callers, len(batches), func(i int) error { return exp.ConsumeTraces(ctx, batches[i]) }))
		batches = in.again
	}

	w := measure(b, func() {
		require.NoError(b, feed(callers, len(batches), func(i int) error { return exp.ConsumeTraces(ctx, batches[i]) }))
		require.NoError(b, exp.Shutdown(ctx))
	})

	// What is measured splits: with the split on, the measured run's
	// rollouts' lines have it; off, none has.
	raw, err := os.ReadFile(filepath.Join(dir, "rollouts.jsonl"))
	require.NoError(b, err)
	split := false
	for _, line := range strings.Split(string(raw), "\n") {
		split = split || strings.Contains(line, `"time_split_ms"`) && (!warm || strings.Contains(line, `"rollout_id":"again-`))
	}
	require.Equal(b, on, split, "time_split on=%v: a measured rollout's line has time_split_ms", on)
	b.StartTimer()
	return w
}
