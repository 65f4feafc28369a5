// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
)

// joinRecording is a gymsim run recorded as the capture phase records it
// (recordCapture): its requests, encoded to be sent once, and its capture
// files.
type joinRecording struct {
	*replaySet
	captures string
}

var (
	joinOnce sync.Once
	joinRec  *joinRecording
	joinErr  error
	joinDir  string // the recording's dir in TMPDIR, removed by TestMain
)

// TestMain removes the recording the benchmarks shared (recordForJoin) once
// they are done: TMPDIR is tmpfs for them, and a run left 12 MB of it.
func TestMain(m *testing.M) {
	code := m.Run()
	if joinDir != "" {
		_ = os.RemoveAll(joinDir)
	}
	os.Exit(code)
}

// recordForJoin records BENCH_JOIN_ROLLOUTS (default 3000) rollouts of
// gymsim (GYMSIM_BIN, else bin/gymsim) once per process.
func recordForJoin(b *testing.B) *joinRecording {
	b.Helper()
	bin := os.Getenv("GYMSIM_BIN")
	if bin == "" {
		bin = filepath.Join("..", "bin", "gymsim")
	}
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("needs the gymsim binary (make gymsim, or GYMSIM_BIN): %v", err)
	}
	joinOnce.Do(func() {
		rollouts := 3000
		if v := os.Getenv("BENCH_JOIN_ROLLOUTS"); v != "" {
			if rollouts, joinErr = strconv.Atoi(v); joinErr != nil {
				return
			}
		}
		dir, err := os.MkdirTemp("", "join-recording-")
		if err != nil {
			joinErr = err
			return
		}
		joinDir = dir
		captures := filepath.Join(dir, "captures")
		rs, err := recordCapture(rollouts, 64, captures, func(args []string) error {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("gymsim: %w\n%s", err, out)
			}
			return nil
		})
		joinRec, joinErr = &joinRecording{replaySet: rs, captures: captures}, err
	})
	require.NoError(b, joinErr)
	return joinRec
}

// BenchmarkCaptureJoin is issue #26's cost of the capture join, measured in
// one process so that nothing but the pipelines differs: a recorded gymsim
// run (its requests and capture files; as the harness's capture phase) through
// gym → gymspans (C) and gym → gymcapture → gymspans (Cj), each component
// built by its factory with its defaults, writing into a fresh dir of TMPDIR
// holding the capture files. One caller (callers=1), or four at once as the
// receiver's concurrent requests are (callers=4), decode each request from
// protobuf (as the receiver does) and hand it on; the pipeline is shut down at the
// end, which decides and writes every span. Each iteration runs both, in
// turn (C first in even iterations, Cj first in odd ones, so that a drift of
// the machine falls on both alike), and reports per span of the recording
// the process's CPU time (every goroutine, GC included) from the first
// request to the end of the shutdown, which starts after a collection not
// measured (measure): C-cpu-ns/span, Cj-cpu-ns/span, and Cj/C, the ratio of
// their sums (and what alternate reports besides).
//
//	TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkCaptureJoin -benchtime 10x -count 3 ./bench
func BenchmarkCaptureJoin(b *testing.B) {
	rec := recordForJoin(b)
	for _, callers := range []int{1, 4} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			alternate(b, "pipeline", [2]string{"C", "Cj"}, rec.total, func(which int) window {
				return runJoinPipeline(b, rec, which == 1, callers)
			})
		})
	}
}

// runJoinPipeline runs the recording through one pipeline and returns what
// it cost.
func runJoinPipeline(b *testing.B, rec *joinRecording, join bool, callers int) window {
	b.StopTimer()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "join-run-")
	require.NoError(b, err)
	defer os.RemoveAll(dir) // not left for the benchmark's end: the next run's disk is this run's
	require.NoError(b, copyFiles(rec.captures, dir))

	gymFactory := gymprocessor.NewFactory()
	expFactory := gymspansexporter.NewFactory()
	expCfg := expFactory.CreateDefaultConfig().(*gymspansexporter.Config)
	expCfg.CaptureDir = dir
	exp, err := expFactory.CreateTraces(ctx, exportertest.NewNopSettings(expFactory.Type()), expCfg)
	require.NoError(b, err)
	var head consumer.Traces = exp
	components := []component.Component{exp}
	if join {
		f := gymcaptureprocessor.NewFactory()
		cfg := f.CreateDefaultConfig().(*gymcaptureprocessor.Config)
		cfg.CaptureDir = dir
		p, err := f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), cfg, head)
		require.NoError(b, err)
		head = p
		components = append(components, p)
	}
	gym, err := gymFactory.CreateTraces(ctx, processortest.NewNopSettings(gymFactory.Type()), gymFactory.CreateDefaultConfig(), head)
	require.NoError(b, err)
	components = append(components, gym)
	host := factoryHost{Host: componenttest.NewNopHost(), gym: gymFactory}
	for _, c := range components { // the exporter first, as a collector starts them
		require.NoError(b, c.Start(ctx, host))
	}

	w := measure(b, func() {
		require.NoError(b, feed(callers, len(rec.bodies), func(i int) error {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(rec.bodies[i]); err != nil {
				return err
			}
			return gym.ConsumeTraces(ctx, req.Traces())
		}))
		for i := len(components) - 1; i >= 0; i-- { // the gym processor first
			require.NoError(b, components[i].Shutdown(ctx))
		}
	})
	if os.Getenv("BENCH_JOIN_LOG") != "" {
		b.Logf("join=%v cpu=%v", join, w.cpu())
	}

	if join { // what is measured joins: a model call carries its tokens
		raw, err := os.ReadFile(filepath.Join(dir, "spans.jsonl"))
		require.NoError(b, err)
		require.True(b, strings.Contains(string(raw), `"gen_ai.usage.input_tokens"`), "no span was joined")
	}
	b.StartTimer()
	return w
}

// alternate runs run(0) and run(1) b.N times each, in turn (0 first in even
// iterations, 1 first in odd ones, so that a drift of the machine falls on
// both alike), each returning what its measured window cost, and reports
// per span (spans per run) each one's CPU, <names[0]>-cpu-ns/span and
// <names[1]>-cpu-ns/span, the ratio of their sums, <names[1]>/<names[0]>,
// and the median over the iterations of a pair's ratio,
// <names[1]>/<names[0]>-pair-median, which a drift across the iterations
// moves less than the sums', with its 95% bounds (-median-lo95,
// -median-hi95) as the harness gives them; each one's heap bytes allocated
// a span (<name>-B/span, what the collections it leaves out would cost:
// measure) and the kernel's share of its CPU (<name>-sys-ns/span), and the
// runs a collection started in anyway (gc-runs). The
// pprof label key = names[which] tells the two apart in a -cpuprofile
// (pprof -tagfocus 'pipeline=^Cj$'): the goroutines started within
// inherit it.
func alternate(b *testing.B, key string, names [2]string, spans int, run func(which int) window) {
	var sum [2]window
	var gcRuns int
	ratios := make([]float64, 0, b.N)
	for i := 0; i < b.N; i++ {
		var pair [2]window
		for k := range 2 {
			which := (i + k) % 2
			pprof.Do(context.Background(), pprof.Labels(key, names[which]), func(context.Context) {
				pair[which] = run(which)
			})
			if pair[which].gcs > 0 {
				gcRuns++
			}
		}
		for w := range 2 {
			sum[w].user += pair[w].user
			sum[w].sys += pair[w].sys
			sum[w].alloc += pair[w].alloc
		}
		ratios = append(ratios, float64(pair[1].cpu())/float64(pair[0].cpu()))
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	if n := len(ratios); n%2 == 0 {
		median = (ratios[n/2-1] + ratios[n/2]) / 2
	}
	perSpan := func(v float64) float64 { return v / float64(b.N*spans) }
	ratio := names[1] + "/" + names[0]
	for w := range 2 {
		b.ReportMetric(perSpan(float64(sum[w].cpu().Nanoseconds())), names[w]+"-cpu-ns/span")
		b.ReportMetric(perSpan(float64(sum[w].sys.Nanoseconds())), names[w]+"-sys-ns/span")
		b.ReportMetric(perSpan(float64(sum[w].alloc)), names[w]+"-B/span")
	}
	b.ReportMetric(float64(sum[1].cpu())/float64(sum[0].cpu()), ratio)
	b.ReportMetric(median, ratio+"-pair-median")
	if lo, hi, level := medianBounds(len(ratios)); level > 0 {
		b.ReportMetric(ratios[lo], ratio+"-median-lo95")
		b.ReportMetric(ratios[hi], ratio+"-median-hi95")
	}
	b.ReportMetric(float64(gcRuns), "gc-runs")
	b.ReportMetric(0, "ns/op")
}

// feed calls consume(i) for every i below n from callers goroutines at once,
// each taking the next i, and returns the first error.
func feed(callers, n int, consume func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := consume(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// factoryHost hands out the gym processor's factory, as a collector's host
// does (rollout_roots: auto asks it).
type factoryHost struct {
	component.Host
	gym processor.Factory
}

func (h factoryHost) GetFactory(kind component.Kind, typ component.Type) component.Factory {
	if kind == component.KindProcessor && typ.String() == gymconv.ProcessorType {
		return h.gym
	}
	return nil
}
