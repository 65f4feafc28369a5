// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// bigString is the 1 MiB attribute value of the golden input; the golden
// files hold bigMarker in its place so they stay readable.
var bigString = strings.Repeat("0123456789abcdef", 1<<16)

const bigMarker = "<the test's 1 MiB string>"

// formatInput is testdata/format_all_types.json plus what OTLP/JSON cannot
// carry: invalid UTF-8 in a name, key and value, and a 1 MiB string.
func formatInput(t testing.TB) ptrace.Traces {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "format_all_types.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	server := td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(0)
	server.SetName("POST \xff/v1/responses\xc3")
	server.Attributes().PutStr("bad.utf8.\xfe", "ok\xffend\xe2\x82")
	server.Attributes().PutStr("big", bigString)
	return td
}

// goldenCase exports in to a fresh capture dir and compares every file
// written with testdata/golden/<name>/, line by line.
func goldenCase(t *testing.T, name string, in ptrace.Traces, mutate func(*Config)) map[string][]string {
	e, _ := newTestExporter(t, mutate)
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), in))
	require.NoError(t, e.shutdown(context.Background()))

	dir := filepath.Join("testdata", "golden", name)
	got := map[string][]string{}
	for _, f := range walkFiles(t, e.cfg.CaptureDir) {
		if f == "." {
			continue
		}
		data, err := os.ReadFile(filepath.Join(e.cfg.CaptureDir, f))
		require.NoError(t, err)
		for i, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			require.True(t, json.Valid(line), "%s line %d is not JSON", f, i+1)
			require.True(t, utf8.Valid(line), "%s line %d is not UTF-8", f, i+1)
		}
		data = bytes.ReplaceAll(data, []byte(bigString), []byte(bigMarker))
		got[f] = strings.SplitAfter(string(data), "\n")
		if *update {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
		}
	}
	want, err := os.ReadDir(dir)
	require.NoError(t, err)
	var wantNames, gotNames []string
	for _, w := range want {
		wantNames = append(wantNames, w.Name())
	}
	for f := range got {
		gotNames = append(gotNames, f)
	}
	sort.Strings(gotNames)
	require.Equal(t, wantNames, gotNames, "files written")
	for _, f := range wantNames {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		wantLines := strings.SplitAfter(string(data), "\n")
		require.Len(t, got[f], len(wantLines), f)
		for i := range wantLines {
			assert.Equal(t, wantLines[i], got[f][i], "%s line %d", f, i+1)
		}
	}
	return got
}

func TestGoldenConsole(t *testing.T) {
	goldenCase(t, "format_all_types_console", formatInput(t), nil)
}

func TestGoldenOTLPJSON(t *testing.T) {
	goldenCase(t, "format_all_types_otlp_json", formatInput(t), func(c *Config) { c.Format = formatOTLPJSON })
}

func TestGoldenRunTemplate(t *testing.T) {
	goldenCase(t, "format_all_types_run_template", formatInput(t), func(c *Config) {
		c.PathTemplate = "{run_id}.{rollout_id}.spans.jsonl"
	})
}

// TestOTLPJSONRoundTrip reads every otlp_json line back with pdata and
// finds exactly the input spans of that file, with their resource and scope.
func TestOTLPJSONRoundTrip(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "format_all_types.json"))
	require.NoError(t, err)
	in, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	in.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("big", bigString)

	e, _ := newTestExporter(t, func(c *Config) { c.Format = formatOTLPJSON })
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), in))

	// Expected: the input spans, each as a one-span Traces, keyed by span id,
	// a resource with service.name.override showing it as service.name and
	// the routing name as service.name.routing, right after it.
	shown := ptrace.NewTraces()
	in.CopyTo(shown)
	for i := 0; i < shown.ResourceSpans().Len(); i++ {
		attrs := shown.ResourceSpans().At(i).Resource().Attributes()
		override, ok := attrs.Get(gymconv.ServiceOverrideAttribute)
		if !ok {
			continue
		}
		shownAttrs := pcommon.NewMap()
		attrs.Range(func(k string, v pcommon.Value) bool {
			if k == gymconv.ServiceNameAttribute {
				shownAttrs.PutStr(k, override.Str())
				k = gymconv.RoutingServiceAttribute
			}
			v.CopyTo(shownAttrs.PutEmpty(k))
			return true
		})
		shownAttrs.CopyTo(attrs)
	}
	flat := func(td ptrace.Traces) map[string]string {
		out := map[string]string{}
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					one := ptrace.NewTraces()
					ors := one.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(ors.Resource())
					ors.SetSchemaUrl(rs.SchemaUrl())
					oss := ors.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(oss.Scope())
					oss.SetSchemaUrl(ss.SchemaUrl())
					ss.Spans().At(k).CopyTo(oss.Spans().AppendEmpty())
					b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(one)
					require.NoError(t, err)
					sid := ss.Spans().At(k).SpanID()
					out[string(sid[:])] = string(b)
				}
			}
		}
		return out
	}
	want := flat(shown)
	read := func(name string) map[string]string {
		lines := readLines(t, filepath.Join(e.cfg.CaptureDir, name))
		require.Len(t, lines, 1, "one request per file per batch")
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(lines[0]))
		require.NoError(t, err)
		return flat(td)
	}
	assert.Equal(t, want, read("spans.jsonl"))
	writePendingNow(t, e)
	got := read("12-3.spans.jsonl")
	assert.Len(t, got, 3)
	for k, v := range got {
		assert.Equal(t, want[k], v)
	}
	assert.Len(t, read("12-4.spans.jsonl"), 2)
}

// TestConsoleFormatsOfEveryLine checks the §4/§5.2 formats on every line of
// the golden input: ids, kinds, times, parent_id null exactly for roots,
// status codes.
func TestConsoleFormatsOfEveryLine(t *testing.T) {
	e, _ := newTestExporter(t, nil)
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), formatInput(t)))
	var (
		hex32 = regexp.MustCompile(`^0x[0-9a-f]{32}$`)
		hex16 = regexp.MustCompile(`^0x[0-9a-f]{16}$`)
		iso   = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
		kinds = map[string]bool{"SpanKind.INTERNAL": true, "SpanKind.SERVER": true, "SpanKind.CLIENT": true, "SpanKind.PRODUCER": true, "SpanKind.CONSUMER": true}
	)
	seenKinds := map[string]bool{}
	seenStatus := map[string]bool{}
	lines := readLines(t, filepath.Join(e.cfg.CaptureDir, "spans.jsonl"))
	require.Len(t, lines, 8)
	for _, l := range lines {
		var m struct {
			Context struct {
				TraceID    string `json:"trace_id"`
				SpanID     string `json:"span_id"`
				TraceState string `json:"trace_state"`
			} `json:"context"`
			Kind         string  `json:"kind"`
			ParentID     *string `json:"parent_id"`
			StartTime    *string `json:"start_time"`
			EndTime      *string `json:"end_time"`
			Status       map[string]string
			TraceID      string `json:"trace_id"`
			SpanID       string `json:"span_id"`
			ParentSpanID string `json:"parent_span_id"`
			Events       []struct {
				Timestamp string `json:"timestamp"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		assert.Regexp(t, hex32, m.Context.TraceID)
		assert.Regexp(t, hex16, m.Context.SpanID)
		assert.Equal(t, "0x"+m.TraceID, m.Context.TraceID)
		assert.Equal(t, "0x"+m.SpanID, m.Context.SpanID)
		assert.True(t, kinds[m.Kind], m.Kind)
		seenKinds[m.Kind] = true
		if m.ParentSpanID == "" {
			assert.Nil(t, m.ParentID)
		} else {
			require.NotNil(t, m.ParentID)
			assert.Regexp(t, hex16, *m.ParentID)
			assert.Equal(t, "0x"+m.ParentSpanID, *m.ParentID)
		}
		require.NotNil(t, m.StartTime)
		assert.Regexp(t, iso, *m.StartTime)
		if m.EndTime != nil {
			assert.Regexp(t, iso, *m.EndTime)
		}
		for _, ev := range m.Events {
			assert.Regexp(t, iso, ev.Timestamp)
		}
		seenStatus[m.Status["status_code"]] = true
	}
	assert.Len(t, seenKinds, 5)
	assert.Equal(t, map[string]bool{"UNSET": true, "OK": true, "ERROR": true}, seenStatus)
}
