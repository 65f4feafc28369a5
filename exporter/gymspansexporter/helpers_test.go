// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// newTestExporter starts an exporter on a fresh capture dir; mutate adjusts
// the default config first.
func newTestExporter(t testing.TB, mutate func(*Config)) (*spansExporter, *componenttest.Telemetry) {
	t.Helper()
	cfg := testConfig(t, mutate)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	e, err := newSpansExporter(set, cfg)
	require.NoError(t, err)
	return e, tel
}

// testConfig is the default config on a fresh capture dir, without the
// service map, adjusted by mutate.
func testConfig(t testing.TB, mutate func(*Config)) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = t.TempDir()
	cfg.ServiceMap.Enabled = false
	if mutate != nil {
		mutate(cfg)
	}
	return cfg
}

// shared sets shared_capture_dir: the tests of several exporters (or
// processes) on one capture dir, and of the locks.
func shared(c *Config) {
	on := true
	c.SharedCaptureDir = &on
}

func startExporter(t testing.TB, e *spansExporter) {
	t.Helper()
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = e.shutdown(context.Background()) })
}

// readLines returns the lines of a file (without newlines).
func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if len(data) == 0 {
		return nil
	}
	require.Equal(t, byte('\n'), data[len(data)-1], "%s must end with a newline", path)
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(t, sc.Err())
	return lines
}

// gymTraces builds a Gym-like stream: rollouts rollouts of spansPer spans
// each (a parentless gym.rollout with CLIENT/SERVER/INTERNAL children), from
// agent, model and resources processes of one run. seed makes ids unique
// across calls.
func gymTraces(seed uint64, rollouts, spansPer int) ptrace.Traces {
	procs := map[string]gymtest.Process{}
	order := []string{"agent", "model", "resources"}
	for i, svc := range []string{"nemo-gym/simple_agent", "nemo-gym/policy_model", "nemo-gym/example_single_tool_call"} {
		procs[order[i]] = gymtest.Process{
			Service: svc, Host: "node-7", PID: int64(4000 + i), Run: "4f2a91c0be31",
			Scope: "nemo.lens.helpers", ScopeVersion: "0.2.0",
			Attributes: map[string]any{"nemo.gym.service_group": "nemo-gym", "dl.rank": int64(0), "telemetry.sdk.language": "python"},
		}
	}
	var spans []gymtest.Span
	failed := map[pcommon.SpanID]bool{}
	for r := 0; r < rollouts; r++ {
		rid := fmt.Sprintf("%d-%d", r/4, r%4)
		trace := fmt.Sprintf("%d/%d", seed, r)
		root := fmt.Sprintf("%d/%d/0", seed, r)
		for s := 0; s < spansPer; s++ {
			d := gymtest.Span{
				ID: fmt.Sprintf("%d/%d/%d", seed, r, s), Parent: root, Trace: trace,
				Proc:  order[[3]int{2, 0, 1}[s%3]], // verify: resources; CLIENT: agent; SERVER: model
				Start: int64(r)*1000 + int64(s), Attributes: map[string]any{gymconv.RolloutAttribute: rid},
			}
			d.End = d.Start + int64(spansPer-s)*3
			switch {
			case s == 0:
				d.Parent, d.Proc, d.Name = "", "agent", "gym.rollout"
				d.Attributes["nemo.gym.server.name"] = "simple_agent"
			case s%3 == 1:
				d.Name, d.Kind = "HTTP POST", ptrace.SpanKindClient
				d.Attributes["http.request.method"] = "POST"
				d.Attributes["url.full"] = "http://127.0.0.1:8001/ng-rollout/" + rid + "/v1/responses"
				d.Attributes["http.response.status_code"] = int64(200)
			case s%3 == 2:
				d.Name, d.Kind = "POST", ptrace.SpanKindServer
				d.Attributes["http.target"] = "/ng-rollout/" + rid + "/v1/responses"
				d.Attributes["http.method"] = "POST"
				d.Attributes["http.status_code"] = int64(200)
			default:
				d.Name = "gym.verify"
				d.Attributes["nemo.gym.server.name"] = "example_single_tool_call"
				d.Attributes["nemo.gym.cpu.percent"] = 12.5
				failed[gymtest.SpanID(d.ID)] = r%7 == 3
			}
			spans = append(spans, d)
		}
	}
	td := gymtest.Build(procs, order, spans)
	gymtest.EachSpan(td, func(_ pcommon.Resource, span ptrace.Span) {
		if failed[span.SpanID()] {
			span.Status().SetCode(ptrace.StatusCodeError)
			span.Status().SetMessage("ValueError: judge failed")
			ev := span.Events().AppendEmpty()
			ev.SetName("exception")
			ev.SetTimestamp(span.EndTimestamp())
			ev.Attributes().PutStr("exception.type", "ValueError")
			ev.Attributes().PutStr("exception.message", "judge failed")
		}
	})
	return td
}

// walkFiles lists every path under dir, relative to it, but the journal
// index's directory (empty after a clean shutdown: TestCleanShutdownLeavesNoIndex).
func walkFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == journal.Dir {
			return filepath.SkipDir
		}
		out = append(out, rel)
		return nil
	}))
	return out
}

// flushFiles writes every pending rollout line to its file now, as the
// next flush tick would.
func flushFiles(t testing.TB, e *spansExporter) {
	t.Helper()
	e.mu.Lock()
	f := e.flusher
	e.mu.Unlock()
	require.NotNil(t, f, "exporter started")
	require.NoError(t, f.tick())
}

// writePendingNow appends every pending rollout line to its file, without
// the fsync of a flush tick.
func writePendingNow(t testing.TB, e *spansExporter) {
	t.Helper()
	e.mu.Lock()
	f := e.flusher
	e.mu.Unlock()
	require.NotNil(t, f, "exporter started")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writePending(allFiles)
}

// withoutRoots gives td's parentless spans a parent that is not there, so
// that no span is a rollout's root (its file stays open after a flush).
func withoutRoots(td ptrace.Traces) ptrace.Traces {
	gymtest.EachSpan(td, func(_ pcommon.Resource, span ptrace.Span) {
		if span.ParentSpanID().IsEmpty() {
			span.SetParentSpanID(pcommon.SpanID{0xee})
		}
	})
	return td
}

var componentType = metadata.Type

// Metric names as the collector exports them (metadata.yaml declares them).
const (
	metricLinesWritten = "otelcol_exporter_gymspans_lines_written"
	metricBytesWritten = "otelcol_exporter_gymspans_bytes_written"
	metricRejected     = "otelcol_exporter_gymspans_rejected_spans"
	metricWriteErrors  = "otelcol_exporter_gymspans_write_errors"
	metricTornTails    = "otelcol_exporter_gymspans_torn_tails_cut"
	metricRotations    = "otelcol_exporter_gymspans_rotations"
	metricOpenFiles    = "otelcol_exporter_gymspans_open_files"
	metricFsyncErrors  = "otelcol_exporter_gymspans_fsync_errors"
	metricOpens        = "otelcol_exporter_gymspans_file_opens"
	metricCreates      = "otelcol_exporter_gymspans_file_creates"
	metricLocks        = "otelcol_exporter_gymspans_file_locks"
	metricAppends      = "otelcol_exporter_gymspans_file_appends"
	metricStats        = "otelcol_exporter_gymspans_file_stats"
	metricTailReads    = "otelcol_exporter_gymspans_tail_reads"
	metricPendingBytes = "otelcol_exporter_gymspans_pending_bytes"
	metricDuplicates   = "otelcol_exporter_gymspans_duplicate_spans"
	metricRecovered    = "otelcol_exporter_gymspans_recovered_lines"
)
