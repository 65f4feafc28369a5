// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	require.NoError(b, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

// BenchmarkExport runs the same Gym span stream (100 rollouts x 20 spans per
// batch, three processes) through gymspans (console, otlp_json) and contrib
// fileexporter (json), each built by its factory, writing into a temp dir,
// from one caller and from four at once. The _small variants have 5 spans
// per rollout and batch, the share a Gym process's SDK batch usually holds.
// gymspans fsyncs every flush_interval (1s) and fileexporter never does; the
// _flush1h variants leave the run without an fsync, at fileexporter's
// durability; fileexporter_json_synced brings fileexporter to gymspans's,
// the benchmark syncing its dir's filesystem every second. _lockhold0
// gives every file's lock back after each batch (lock_hold: 0). It reports
// spans/s, spans per CPU-second, allocs/span, and MB/s of output
// (SetBytes).
func BenchmarkExport(b *testing.B) {
	for _, shape := range []struct {
		suffix   string
		spansPer int
	}{{"", 20}, {"_small", 5}} {
		td := gymTraces(42, 100, shape.spansPer)
		benchExporters(b, td, shape.suffix)
	}
}

func benchExporters(b *testing.B, td ptrace.Traces, suffix string) {
	spans := td.SpanCount()
	// gymspans builds the exporter's default config (no service map) on dir,
	// changed by set.
	gymspans := func(set func(*Config)) func(dir string) (exporter.Factory, component.Config) {
		return func(dir string) (exporter.Factory, component.Config) {
			cfg := createDefaultConfig().(*Config)
			cfg.CaptureDir = dir
			cfg.ServiceMap.Enabled = false
			set(cfg)
			return NewFactory(), cfg
		}
	}
	fileexporterJSON := func(dir string) (exporter.Factory, component.Config) {
		f := fileexporter.NewFactory()
		cfg := f.CreateDefaultConfig().(*fileexporter.Config)
		cfg.Path = filepath.Join(dir, "traces.json")
		return f, cfg
	}
	for _, tc := range []struct {
		name      string
		make      func(dir string) (exporter.Factory, component.Config)
		syncEvery time.Duration
	}{
		{name: "gymspans_console", make: gymspans(func(*Config) {})},
		// Fewer descriptors than rollouts per batch: the LRU evicts every
		// file before its next append, so each append reopens (a Gym run
		// with more rollouts in flight than max_open_files).
		{name: "gymspans_console_evicting", make: gymspans(func(c *Config) { c.MaxOpenFiles = 64 })},
		// No fsync within the run, like fileexporter, which never fsyncs:
		// what console costs at fileexporter's durability.
		{name: "gymspans_console_flush1h", make: gymspans(func(c *Config) { c.FlushInterval = time.Hour })},
		// Every lock given back after its batch: a flock, an fstat and an
		// unlock per file and batch.
		{name: "gymspans_console_lockhold0", make: gymspans(func(c *Config) { c.LockHold = 0 })},
		{name: "gymspans_otlp_json", make: gymspans(func(c *Config) { c.Format = formatOTLPJSON })},
		// The same output as fileexporter (each span once, OTLP/JSON), split
		// per rollout: pipeline C' of the benchmark harness.
		{name: "gymspans_otlp_json_no_combined", make: gymspans(func(c *Config) { c.Format, c.CombinedFile = formatOTLPJSON, "" })},
		// fileexporter's output and durability: each span once, no fsync
		// within the run.
		{name: "gymspans_otlp_json_no_combined_flush1h", make: gymspans(func(c *Config) {
			c.Format, c.CombinedFile, c.FlushInterval = formatOTLPJSON, "", time.Hour
		})},
		{name: "fileexporter_json", make: fileexporterJSON},
		// fileexporter at gymspans's durability: the benchmark syncs its
		// dir's filesystem every second, as gymspans's flusher does.
		{name: "fileexporter_json_synced", make: fileexporterJSON, syncEvery: time.Second},
	} {
		for _, callers := range []int{1, 4} {
			name := tc.name + suffix
			if callers > 1 {
				name += fmt.Sprintf("_%dcallers", callers)
			}
			b.Run(name, func(b *testing.B) { benchExport(b, tc.make, tc.syncEvery, td, spans, callers) })
		}
	}
}

// benchExport pushes td b.N times from callers goroutines at once (a
// receiver calls its exporter from several), each push waiting for the
// previous one of its goroutine. With syncEvery > 0 the dir's filesystem is
// synced that often from the exporter's start on.
func benchExport(b *testing.B, mk func(dir string) (exporter.Factory, component.Config), syncEvery time.Duration, td ptrace.Traces, spans, callers int) {
	cleanPageCache()
	dir := b.TempDir()
	f, cfg := mk(dir)
	exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(b, err)
	require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(b, exp.Shutdown(context.Background())) }()
	if syncEvery > 0 {
		defer syncDirEvery(b, dir, syncEvery)()
	}
	// One warm-up batch measures the output per batch.
	require.NoError(b, exp.ConsumeTraces(context.Background(), td))
	b.SetBytes(dirBytes(b, dir))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := exp.ConsumeTraces(context.Background(), td); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.N*spans)/elapsed.Seconds(), "spans/s")
	// Spans per second of process CPU (user + system, the write
	// syscalls included): steadier than wall time on a shared machine.
	b.ReportMetric(float64(b.N*spans)/cpu.Seconds(), "spans/cpu-s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*spans), "allocs/span")
}

// cleanPageCache writes back what earlier benchmarks left dirty, so that a
// benchmark on a disk-backed dir is not throttled by its predecessor's bytes
// (console writes four times fileexporter's).
func cleanPageCache() { unix.Sync() }

func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEncode measures the encoders alone on BenchmarkExport's stream:
// each span's line, as the exporter encodes it once for all its files.
func BenchmarkEncode(b *testing.B) {
	td := gymTraces(42, 100, 20)
	for _, otlp := range []bool{false, true} {
		name := "console"
		if otlp {
			name = "otlp_json"
		}
		b.Run(name, func(b *testing.B) {
			var arena, res, scope []byte
			var clock spanjson.TimeCache
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				arena = arena[:0]
				rss := td.ResourceSpans()
				for j := 0; j < rss.Len(); j++ {
					rs := rss.At(j)
					if !otlp {
						res = spanjson.AppendConsoleResource(res[:0], rs.Resource(), rs.SchemaUrl(), spanjson.ServiceNames{})
					}
					for k := 0; k < rs.ScopeSpans().Len(); k++ {
						ss := rs.ScopeSpans().At(k)
						if !otlp {
							scope = spanjson.AppendConsoleScope(scope[:0], ss.Scope())
						}
						for l := 0; l < ss.Spans().Len(); l++ {
							if otlp {
								arena = spanjson.AppendOTLPSpan(arena, ss.Spans().At(l), &clock)
							} else {
								arena = spanjson.AppendConsoleSpan(arena, ss.Spans().At(l), res, scope, &clock)
							}
						}
					}
				}
			}
			b.SetBytes(int64(len(arena)))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*td.SpanCount()), "ns/span")
		})
	}
}

// BenchmarkWriteFloor measures what the kernel alone charges for the bytes
// an exporter writes per batch: the output of one batch of each exporter
// (its files read back and concatenated) appended to one file with a
// single write(2) per batch, with no encoding, no locking and no per-file
// split. The _per_file variants keep the layout instead: each file's share
// of the batch is appended to its own file with one write(2), still with no
// encoding and no locking, which is what the per-rollout files alone cost
// the kernel (on ext4 every append also updates the inode's times).
// Read against BenchmarkExport, it separates the cost of the bytes
// (console writes every span twice, with its resource) and of the layout
// from our own.
func BenchmarkWriteFloor(b *testing.B) {
	td := gymTraces(42, 100, 20)
	spans := td.SpanCount()
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"console", nil},
		{"otlp_json_no_combined", func(c *Config) { c.Format = formatOTLPJSON; c.CombinedFile = "" }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			src := b.TempDir()
			cfg := createDefaultConfig().(*Config)
			cfg.CaptureDir = src
			cfg.ServiceMap.Enabled = false
			if tc.mutate != nil {
				tc.mutate(cfg)
			}
			f := NewFactory()
			exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
			require.NoError(b, err)
			require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(b, exp.ConsumeTraces(context.Background(), td))
			require.NoError(b, exp.Shutdown(context.Background()))
			ents, err := os.ReadDir(src)
			require.NoError(b, err)
			var parts [][]byte
			for _, e := range ents {
				if e.IsDir() {
					continue // the journal index (.gymspans-journal): the exporter's bookkeeping, not a file it writes spans to
				}
				data, err := os.ReadFile(filepath.Join(src, e.Name()))
				require.NoError(b, err)
				parts = append(parts, data)
			}
			b.Run("one_file", func(b *testing.B) {
				var out []byte
				for _, p := range parts {
					out = append(out, p...)
				}
				benchWriteFloor(b, [][]byte{out}, spans, 0)
			})
			b.Run("per_file", func(b *testing.B) { benchWriteFloor(b, parts, spans, 0) })
			b.Run("per_file_synced", func(b *testing.B) { benchWriteFloor(b, parts, spans, time.Second) })
		})
	}
}

// benchWriteFloor appends parts[i] to file i of a fresh dir, one write(2)
// each, b.N times; with syncEvery > 0, a goroutine syncs the dir's filesystem
// that often meanwhile, as the exporter's flusher does (design §5.1's fsync at
// most every flush_interval, which fileexporter does not do at all).
func benchWriteFloor(b *testing.B, parts [][]byte, spans int, syncEvery time.Duration) {
	cleanPageCache()
	dst := b.TempDir()
	if syncEvery > 0 {
		defer syncDirEvery(b, dst, syncEvery)()
	}
	files := make([]*os.File, len(parts))
	size := 0
	for i, p := range parts {
		fh, err := os.OpenFile(filepath.Join(dst, fmt.Sprintf("%d.jsonl", i)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		require.NoError(b, err)
		defer fh.Close()
		files[i] = fh
		size += len(p)
	}
	b.SetBytes(int64(size))
	cpu0 := cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for j, fh := range files {
			if _, err := fh.Write(parts[j]); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.ReportMetric(float64(b.N*spans)/elapsed.Seconds(), "spans/s")
	b.ReportMetric(float64(b.N*spans)/cpu.Seconds(), "spans/cpu-s")
}

// BenchmarkExportCombinedSpans compares combined_spans all and rest on a
// stream of distinct batches (BenchmarkExport pushes one batch again and
// again, which the dedup window drops after the first): 64 batches of 100
// rollouts of 20 spans in turn, with a dedup window smaller than the cycle,
// so that every push is new.
func BenchmarkExportCombinedSpans(b *testing.B) {
	var tds []ptrace.Traces
	for i := range 64 {
		tds = append(tds, gymTraces(uint64(1000+i), 100, 20))
	}
	for _, mode := range []string{combinedAll, combinedRest} {
		for _, callers := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s_%dcallers", mode, callers), func(b *testing.B) {
				cfg := createDefaultConfig().(*Config)
				cfg.CaptureDir = b.TempDir()
				cfg.ServiceMap.Enabled = false
				cfg.CombinedSpans = mode
				cfg.DedupWindowSpans = 1 << 16
				f := NewFactory()
				exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
				require.NoError(b, err)
				require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
				defer func() { require.NoError(b, exp.Shutdown(context.Background())) }()
				spans := tds[0].SpanCount()
				cpu0 := cpuTime(b)
				b.ResetTimer()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
							if err := exp.ConsumeTraces(context.Background(), tds[n%int64(len(tds))]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N*spans)/(cpuTime(b)-cpu0).Seconds(), "spans/cpu-s")
			})
		}
	}
}
