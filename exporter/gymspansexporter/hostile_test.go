// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
)

// Hostile shapes (issue #8) through the exporter made by the factory into a
// t.TempDir(). Hostile rollout ids and planted links are in layout_test.go
// (TestHostileRolloutIDsStayInside), the descriptor bound for a few files in
// files_test.go; these are the extreme sizes.

// hostileTempDir is a fresh directory on /dev/shm when that is a tmpfs
// (these tests measure the exporter, not the disk's fsync: on the CI's
// virtual disk the shutdown fsync of 100 MB alone takes seconds), else
// t.TempDir().
func hostileTempDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "gymspans-hostile-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

func hostileExporter(t *testing.T, mutate func(*Config)) (exporter.Traces, string, *componenttest.Telemetry) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = filepath.Join(hostileTempDir(t), "capture")
	cfg.ServiceMap.Enabled = false
	if mutate != nil {
		mutate(cfg)
	}
	tel := componenttest.NewTelemetry()
	set := exportertest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	exp, err := NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return exp, cfg.CaptureDir, tel
}

func hTraceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	id[0] = 0xfe
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func hSpanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n+1)
	return id
}

func hSpans(td ptrace.Traces) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	rs.Resource().Attributes().PutStr("nemo.run.id", "hostile-run")
	return rs.ScopeSpans().AppendEmpty().Spans()
}

func hAdd(spans ptrace.SpanSlice, tid pcommon.TraceID, sid, parent pcommon.SpanID, rollout string) ptrace.Span {
	s := spans.AppendEmpty()
	s.SetTraceID(tid)
	s.SetSpanID(sid)
	s.SetParentSpanID(parent)
	s.SetName("step")
	s.SetStartTimestamp(1_700_000_000_000_000_000)
	s.SetEndTimestamp(1_700_000_001_000_000_000)
	if rollout != "" {
		s.Attributes().PutStr("nemo.gym.rollout.id", rollout)
	}
	return s
}

// jsonLines reads a file of JSON lines, failing on any line that is not a
// JSON object, and returns them decoded.
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "%s line %d", path, len(out)+1)
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

// countJSONLines counts the lines of a file, failing on one that is not
// valid JSON (cheaper than decoding, for the large files).
func countJSONLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		n++
		require.True(t, json.Valid(sc.Bytes()), "%s line %d", path, n)
	}
	require.NoError(t, sc.Err())
	return n
}

// exportAll writes td, shuts down and returns the combined file's lines.
// exportAll exports td and returns the lines of spans.jsonl: one per span
// but the dups written before.
func exportAll(t *testing.T, exp exporter.Traces, capture string, td ptrace.Traces, dups int) []map[string]any {
	t.Helper()
	n := td.SpanCount() - dups
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))
	lines := jsonLines(t, filepath.Join(capture, "spans.jsonl"))
	require.Len(t, lines, n, "one line per span in spans.jsonl")
	return lines
}

func TestHostile100kSpanTraceFiles(t *testing.T) {
	const n = 100_000
	// The combined file is off here: it would double the time and prove
	// nothing the rollout file does not (-race on 2 cores).
	exp, capture, _ := hostileExporter(t, func(c *Config) { c.CombinedFile = "" })
	td := ptrace.NewTraces()
	spans := hSpans(td)
	hAdd(spans, hTraceID(1), hSpanID(0), pcommon.SpanID{}, "wide-1")
	for i := 1; i < n; i++ {
		hAdd(spans, hTraceID(1), hSpanID(uint64(i)), hSpanID(0), "wide-1")
	}
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, n, countJSONLines(t, filepath.Join(capture, "wide-1.spans.jsonl")))
	assert.Len(t, jsonLines(t, filepath.Join(capture, "rollouts.jsonl")), 1, "one root")
}

func TestHostile10kDeepChainFiles(t *testing.T) {
	const depth = 10_000
	exp, capture, _ := hostileExporter(t, nil)
	td := ptrace.NewTraces()
	spans := hSpans(td)
	for i := range depth {
		var parent pcommon.SpanID
		if i > 0 {
			parent = hSpanID(uint64(i - 1))
		}
		hAdd(spans, hTraceID(1), hSpanID(uint64(i)), parent, "chain-1")
	}
	lines := exportAll(t, exp, capture, td, 0)
	for i, l := range lines {
		want := ""
		if i > 0 {
			p := hSpanID(uint64(i - 1))
			want = p.String()
		}
		require.Equal(t, want, l["parent_span_id"], "line %d", i)
	}
}

func TestHostile1MiBAttributeValuesFiles(t *testing.T) {
	big := strings.Repeat("\u00e9x\"\\\n\xff", 1<<20/8) // escapes, non-ASCII, invalid UTF-8
	exp, capture, tel := hostileExporter(t, nil)
	td := ptrace.NewTraces()
	spans := hSpans(td)
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("host.name", big)
	hAdd(spans, hTraceID(1), hSpanID(0), pcommon.SpanID{}, "big-1").Attributes().PutStr("gen_ai.prompt", big)
	hAdd(spans, hTraceID(1), hSpanID(1), hSpanID(0), strings.Repeat("r", 1<<20)) // a 1 MiB rollout id
	lines := exportAll(t, exp, capture, td, 0)
	want := strings.ToValidUTF8(big, "\uFFFD")
	assert.Equal(t, want, lines[0]["attributes"].(map[string]any)["gen_ai.prompt"])
	assert.Equal(t, want, lines[1]["resource"].(map[string]any)["attributes"].(map[string]any)["host.name"])
	assert.Len(t, jsonLines(t, filepath.Join(capture, "big-1.spans.jsonl")), 1)
	names, err := os.ReadDir(capture)
	require.NoError(t, err)
	for _, e := range names {
		assert.Less(t, len(e.Name()), 256, "the 1 MiB id never became a name")
	}
	assert.Equal(t, int64(1), metricByAttr(t, tel, "otelcol_exporter_gymspans_rejected_spans", "reason")[rejectRolloutID])
}

func TestHostile10kAttributesFiles(t *testing.T) {
	exp, capture, _ := hostileExporter(t, nil)
	td := ptrace.NewTraces()
	s := hAdd(hSpans(td), hTraceID(1), hSpanID(0), pcommon.SpanID{}, "attrs-1")
	for i := range 10_000 {
		s.Attributes().PutInt("attr."+strconv.Itoa(i), int64(i))
	}
	lines := exportAll(t, exp, capture, td, 0)
	attrs := lines[0]["attributes"].(map[string]any)
	assert.Len(t, attrs, 10_001)
	assert.InDelta(t, 9999, attrs["attr.9999"], 0)
}

// TestHostileIDsFiles: parent cycles, self-parents, zero trace and span ids
// and duplicate span ids are each written once per occurrence, as they are.
func TestHostileIDsFiles(t *testing.T) {
	exp, capture, _ := hostileExporter(t, nil)
	td := ptrace.NewTraces()
	spans := hSpans(td)
	hAdd(spans, hTraceID(1), hSpanID(1), hSpanID(2), "cyc-1")
	hAdd(spans, hTraceID(1), hSpanID(2), hSpanID(1), "cyc-1")
	hAdd(spans, hTraceID(1), hSpanID(3), hSpanID(3), "cyc-1")
	hAdd(spans, pcommon.TraceID{}, hSpanID(4), pcommon.SpanID{}, "zero-1")
	hAdd(spans, hTraceID(2), pcommon.SpanID{}, pcommon.SpanID{}, "zero-1")
	hAdd(spans, pcommon.TraceID{}, pcommon.SpanID{}, pcommon.SpanID{}, "")
	for range 3 {
		hAdd(spans, hTraceID(3), hSpanID(5), pcommon.SpanID{}, "dup-1")
	}
	lines := exportAll(t, exp, capture, td, 2)
	assert.Equal(t, strings.Repeat("0", 32), lines[3]["trace_id"])
	assert.Equal(t, strings.Repeat("0", 16), lines[4]["span_id"])
	assert.Equal(t, lines[2]["span_id"], lines[2]["parent_span_id"], "a self-parent is written as it is")
	assert.Len(t, jsonLines(t, filepath.Join(capture, "cyc-1.spans.jsonl")), 3)
	assert.Len(t, jsonLines(t, filepath.Join(capture, "zero-1.spans.jsonl")), 2)
	assert.Len(t, jsonLines(t, filepath.Join(capture, "dup-1.spans.jsonl")), 1, "a span sent three times is written once (design §4.6)")
}

// capturedFDs counts this process's descriptors that lead into dir.
func capturedFDs(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && (target == dir || strings.HasPrefix(target, dir+"/")) {
			n++
		}
	}
	return n
}

// hostileRolloutFiles is the count of TestHostileManyRolloutFiles: 20,000 by
// default (each rollout is a file: CI runs -race), 1,000,000 with
// OTELCOL_GYM_HOSTILE_FULL=1 (a million files: about 4 GiB of disk blocks
// and a million inodes).
func hostileRolloutFiles() int {
	if os.Getenv("OTELCOL_GYM_HOSTILE_FULL") == "1" {
		return 1_000_000
	}
	return 20_000
}

// heapAfterGC is the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHostileManyRolloutFiles: a stream of distinct rollout ids (each its
// own file) keeps at most max_open_files descriptors into the capture dir
// open at every sample, and the exporter's heap does not grow with the
// rollouts seen (its tables are bounded at 131,072 entries).
func TestHostileManyRolloutFiles(t *testing.T) {
	n := hostileRolloutFiles()
	const maxOpen = 32
	exp, capture, _ := hostileExporter(t, func(c *Config) { c.MaxOpenFiles = maxOpen })
	capture, err := filepath.EvalSymlinks(capture)
	require.NoError(t, err)
	before := heapAfterGC()
	var peakHeap uint64
	peakFDs := 0
	const batch = 500
	for i := 0; i < n; i += batch {
		td := ptrace.NewTraces()
		spans := hSpans(td)
		for j := i; j < i+batch; j++ {
			hAdd(spans, hTraceID(uint64(j)), hSpanID(uint64(j)), pcommon.SpanID{}, "task"+strconv.Itoa(j/4)+"-"+strconv.Itoa(j%4))
		}
		require.NoError(t, exp.ConsumeTraces(context.Background(), td))
		peakFDs = max(peakFDs, capturedFDs(t, capture))
		if (i/batch)%(max(n/batch/4, 1)) == 0 {
			peakHeap = max(peakHeap, heapAfterGC())
		}
	}
	peakHeap = max(peakHeap, heapAfterGC())
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Zero(t, capturedFDs(t, capture), "every descriptor is closed at shutdown")
	growth := int64(peakHeap) - int64(before)
	t.Logf("%d rollout files: peak %d descriptors into the capture dir (max_open_files %d), heap growth %d MiB",
		n, peakFDs, maxOpen, growth>>20)
	assert.LessOrEqual(t, peakFDs, maxOpen)
	// The bounded tables hold at most 131,072 rollouts and spans, some tens
	// of MiB at most; not the n spans.
	assert.Less(t, growth, int64(96<<20))
	ents, err := os.ReadDir(capture)
	require.NoError(t, err)
	rolloutFiles, other := 0, map[string]bool{}
	for _, e := range ents {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "task") && strings.HasSuffix(name, ".spans.jsonl"):
			rolloutFiles++
		case name == "spans.jsonl", name == "rollouts.jsonl", capturedir.IsBackupName("spans.jsonl", name):
			// The combined file rotates (100 MiB) at the full size.
		case name == journal.Dir:
			index, err := os.ReadDir(filepath.Join(capture, name))
			require.NoError(t, err)
			assert.Empty(t, index, "a clean shutdown leaves no journal index")
		default:
			other[name] = true
		}
	}
	assert.Equal(t, n, rolloutFiles, "one file per rollout")
	assert.Empty(t, other, "no other file in the capture dir")
}
