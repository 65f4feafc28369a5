// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
)

// TestBenchQuick runs the harness's smoke mode end to end. It needs the
// binaries and a few minutes, so it runs only with OTELCOL_GYM_BENCH=1
// (OTELCOL_GYM_BIN and GYMSIM_BIN point at prebuilt binaries, as in the
// Makefile's test target).
func TestBenchQuick(t *testing.T) {
	if os.Getenv("OTELCOL_GYM_BENCH") != "1" {
		t.Skip("set OTELCOL_GYM_BENCH=1 to run the benchmark harness's quick mode")
	}
	args := []string{"-quick", "-out", t.TempDir()}
	if p := os.Getenv("OTELCOL_GYM_BIN"); p != "" {
		args = append(args, "-collector", p)
	}
	if p := os.Getenv("GYMSIM_BIN"); p != "" {
		args = append(args, "-gymsim", p)
	}
	var out bytes.Buffer
	code := run(args, &out, &out)
	t.Log(out.String())
	require.Equal(t, 0, code)
	assert.Contains(t, out.String(), "## replay")
	assert.NotContains(t, out.String(), "## Errors")
}

func spanID(v uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], v)
	return id
}

// sample builds two resources, each with spans; one span links to another.
func sample() ptrace.Traces {
	td := ptrace.NewTraces()
	var tid pcommon.TraceID
	tid[0] = 7
	for r := 0; r < 2; r++ {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc")
		ss := rs.ScopeSpans().AppendEmpty()
		for i := 1; i <= 3; i++ {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(tid)
			s.SetSpanID(spanID(uint64(r*10 + i)))
			s.SetName("span")
			if i > 1 {
				s.SetParentSpanID(spanID(uint64(r*10 + 1)))
			}
			s.Attributes().PutStr("nemo.gym.rollout.id", "1-0")
			if i == 3 {
				l := s.Links().AppendEmpty()
				l.SetTraceID(tid)
				l.SetSpanID(spanID(0xabcdef))
				l.Attributes().PutStr("nemo.gym.link.type", "parent")
			}
		}
	}
	return td
}

func collect(format string, line []byte) []uint64 {
	var ids []uint64
	lineSpans(format, line, func(id uint64, _ bool) { ids = append(ids, id) })
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func TestLineSpansOTLPSkipsLinks(t *testing.T) {
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(sample())
	require.NoError(t, err)
	require.Contains(t, string(raw), "abcdef", "the link's span id is in the line")
	assert.Equal(t, []uint64{1, 2, 3, 11, 12, 13}, collect(fmtOTLP, raw))
}

// TestLineSpansConsole reads lines written by the gymspans exporter itself,
// so a change of its line format breaks this test, not the benchmark.
func TestLineSpansConsole(t *testing.T) {
	dir := t.TempDir()
	f := gymspansexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*gymspansexporter.Config)
	cfg.CaptureDir = dir
	exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	td := sample()
	syn := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	syn.SetSpanID(spanID(99))
	syn.SetTraceID(pcommon.TraceID{7})
	syn.SetName("HTTP POST")
	syn.Attributes().PutBool("nemo.gym.synthetic", true)
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))

	c, err := countOutput("C", dir, nil)
	require.NoError(t, err)
	assert.Equal(t, spanCount{Found: 6, Distinct: 6, Synthetic: 1}, c)

	raw, err := os.ReadFile(filepath.Join(dir, "spans.jsonl"))
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	require.Len(t, lines, 7)
	assert.Equal(t, []uint64{1}, collect(fmtConsole, lines[0]))
	assert.Equal(t, []uint64{3}, collect(fmtConsole, lines[2]), "the link's context span id is not the span's")
}

func TestCountOutputOTLP(t *testing.T) {
	dir := t.TempDir()
	raw, err := (&ptrace.JSONMarshaler{}).MarshalTraces(sample())
	require.NoError(t, err)
	// Two lines, the second repeating span 1: a duplicate, and span 2 missing
	// from the expected set.
	dup := ptrace.NewTraces()
	sample().ResourceSpans().At(0).CopyTo(dup.ResourceSpans().AppendEmpty())
	raw2, err := (&ptrace.JSONMarshaler{}).MarshalTraces(dup)
	require.NoError(t, err)
	content := append(append(append(raw, '\n'), raw2...), '\n')
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spans.json"), content, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), raw, 0o600))

	c, err := countOutput("A", dir, nil)
	require.NoError(t, err)
	assert.Equal(t, spanCount{Found: 6, Distinct: 6, Duplicates: 3}, c)

	expected := map[uint64]uint8{1: classDirect, 3: classDirect, 11: classDirect, 12: classDirect, 13: classDirect, 42: classDirect}
	c, err = countOutput("A", dir, expected)
	require.NoError(t, err)
	assert.Equal(t, spanCount{Found: 5, FoundInRollout: 5, Distinct: 6, Duplicates: 3, Unexpected: 1}, c)
}

func TestParseStatCPU(t *testing.T) {
	// comm holds spaces and parentheses; utime 250, stime 50 ticks.
	stat := "1234 (otel col (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 500 0 0"
	d, err := parseStatCPU(stat)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, d)
	_, err = parseStatCPU("1234 (x) S 1")
	assert.Error(t, err)

	self, err := readProc(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, self.PeakRSS)
}

func TestParseMetrics(t *testing.T) {
	in := `# HELP otelcol_receiver_accepted_spans_total Number of spans
# TYPE otelcol_receiver_accepted_spans_total counter
otelcol_receiver_accepted_spans_total{receiver="otlp",transport="grpc"} 120
otelcol_receiver_accepted_spans_total{receiver="otlp",transport="http",x="a b"} 30
otelcol_exporter_sent_spans{exporter="file"} 150 1700000000000
`
	m, err := parseMetrics(strings.NewReader(in))
	require.NoError(t, err)
	assert.InDelta(t, 150, m[mAccepted], 0)
	assert.InDelta(t, 150, m[mSent], 0)
}

func TestClassifySynthetic(t *testing.T) {
	reqs := synthesize(10)
	class := classify(reqs)
	total := 0
	for _, td := range reqs {
		total += td.SpanCount()
	}
	require.Len(t, class, total)
	count := map[uint8]int{}
	names := map[uint8]map[string]bool{}
	eachSpan(reqs, func(_ pcommon.Resource, s ptrace.Span) {
		c := class[idOf(s.SpanID())]
		count[c]++
		if names[c] == nil {
			names[c] = map[string]bool{}
		}
		names[c][s.Name()] = true
	})
	// Per rollout: orchestrator HTTP POST, POST /run and its two ASGI spans
	// are upward; gym.rollout, the CLIENT calls to /ng-rollout/<id>/ (url.full)
	// and the SERVER spans they reach are direct; the ASGI spans of those
	// SERVER spans are downward. gym.job is in no rollout.
	assert.Equal(t, map[uint8]int{classNone: 1, classUpward: 40, classDirect: 70, classDownward: 60}, count)
	assert.Equal(t, map[string]bool{"gym.job": true}, names[classNone])
	assert.True(t, names[classUpward]["POST /run"])
	assert.True(t, names[classUpward]["HTTP POST"])
}

func TestBuildReplayPassesAreFresh(t *testing.T) {
	reqs := synthesize(20)
	per := 0
	for _, td := range reqs {
		per += td.SpanCount()
	}
	rs, err := buildReplay(reqs, 3*per)
	require.NoError(t, err)
	require.Equal(t, 3*per, rs.total)
	assert.Len(t, rs.class, rs.total, "every pass has its own span ids")

	runs := map[string]int{}
	parents := 0
	seen := map[uint64]bool{}
	for i, body := range rs.bodies {
		er := ptraceotlp.NewExportRequest()
		require.NoError(t, er.UnmarshalProto(body))
		require.Equal(t, rs.spans[i], er.Traces().SpanCount())
		eachSpan([]ptrace.Traces{er.Traces()}, func(res pcommon.Resource, s ptrace.Span) {
			v, _ := res.Attributes().Get("nemo.run.id")
			runs[v.Str()]++
			seen[idOf(s.SpanID())] = true
		})
	}
	assert.Equal(t, map[string]int{"bench-p0": per, "bench-p1": per, "bench-p2": per}, runs)
	// Parent ids were masked like span ids: every parent is a span of the set.
	for _, body := range rs.bodies {
		er := ptraceotlp.NewExportRequest()
		require.NoError(t, er.UnmarshalProto(body))
		eachSpan([]ptrace.Traces{er.Traces()}, func(_ pcommon.Resource, s ptrace.Span) {
			if p := s.ParentSpanID(); !p.IsEmpty() {
				parents++
				assert.True(t, seen[idOf(p)], "parent %s is in the replay", p)
			}
		})
	}
	assert.Equal(t, 3*(per-1), parents)
}

func TestTailerFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	tl, err := startTailer(dir, "C", false)
	require.NoError(t, err)
	line := func(id uint64) string {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], id)
		return `{"name":"x","context":{"span_id":"0x` + hexs(b[:]) + `"},"span_id":"` + hexs(b[:]) + `"}` + "\n"
	}
	f, err := os.Create(filepath.Join(dir, "spans.jsonl"))
	require.NoError(t, err)
	_, _ = f.WriteString(line(1) + line(2) + `{"name":"partial","span_id":"00000000`)
	// The rotation must come after the tailer opened the file (as it does
	// behind a collector, which writes long before it rotates): wait until it
	// has read the first two lines. A bounded poll of that observable count.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for tl.distinct.Load() < 2 {
		select {
		case <-deadline:
			t.Fatalf("the tailer read %d of the first 2 lines", tl.distinct.Load())
		case <-tick.C:
		}
	}
	require.NoError(t, os.Rename(filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "spans-2026.jsonl")))
	_, _ = f.WriteString("00000003\"}\n")
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spans.jsonl"), []byte(line(4)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(line(5)), 0o600))
	require.NoError(t, tl.close())
	got := []uint64{}
	for id := range tl.seen() {
		got = append(got, id)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	assert.Equal(t, []uint64{1, 2, 3, 4}, got)
	assert.EqualValues(t, 4, tl.distinct.Load())
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestQuantileAndMedian(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.InDelta(t, 5, quantile(v, 0.5), 0)
	assert.InDelta(t, 10, quantile(v, 0.99), 0)
	assert.InDelta(t, 1, quantile(v, 0.01), 0)
	assert.InDelta(t, 2.5, median([]float64{4, 1, 3, 2}), 0)
	assert.InDelta(t, 3, median([]float64{5, 3, 1}), 0)
}

func TestConfigsRender(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"A", "B", "C", "Cstorage", "Cprime", "Cgenai", "Cjoin", "Cnosplit", "D", "sink"} {
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, renderConfig(name, ports{GRPC: 1, HTTP: 2, Metrics: 3, SinkGRPC: 4, Pprof: 5, Out: "/tmp/x"}, p))
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "{{", name)
		assert.Contains(t, string(raw), "127.0.0.1:1", name)
	}
}

// A known CLIENT span whose callee sends no SERVER span is class peer; the
// summary names every class.
func TestClassifyPeerWithoutServer(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	call := spans.AppendEmpty()
	call.SetTraceID(pcommon.TraceID{1})
	call.SetSpanID(pcommon.SpanID{1})
	call.SetKind(ptrace.SpanKindClient)
	call.Attributes().PutStr("nemo.gym.rollout.id", "0-0")
	served := spans.AppendEmpty()
	call.CopyTo(served)
	served.SetSpanID(pcommon.SpanID{2})
	server := spans.AppendEmpty()
	server.SetTraceID(pcommon.TraceID{1})
	server.SetSpanID(pcommon.SpanID{3})
	server.SetParentSpanID(pcommon.SpanID{2})
	server.SetKind(ptrace.SpanKindServer)
	class := classify([]ptrace.Traces{td})
	assert.Equal(t, classPeer, class[idOf(pcommon.SpanID{1})])
	assert.Equal(t, classDirect, class[idOf(pcommon.SpanID{2})])
	assert.Contains(t, classCounts(class), "peer 1")
}
