// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// sdkJSON is span as the Python SDK's ReadableSpan.to_json() shows it
// (the shape Gym's console exporter prints, design §10), for tests.
func sdkJSON(res pcommon.Resource, span ptrace.Span) map[string]any {
	iso := func(ts pcommon.Timestamp) string {
		return ts.AsTime().UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	var parent any
	if !span.ParentSpanID().IsEmpty() {
		parent = "0x" + span.ParentSpanID().String()
	}
	kind := map[ptrace.SpanKind]string{
		ptrace.SpanKindInternal: "SpanKind.INTERNAL", ptrace.SpanKindServer: "SpanKind.SERVER",
		ptrace.SpanKindClient: "SpanKind.CLIENT", ptrace.SpanKindProducer: "SpanKind.PRODUCER",
		ptrace.SpanKindConsumer: "SpanKind.CONSUMER", ptrace.SpanKindUnspecified: "SpanKind.INTERNAL",
	}[span.Kind()]
	status := map[string]any{"status_code": strings.ToUpper(span.Status().Code().String())}
	if span.Status().Message() != "" {
		status["description"] = span.Status().Message()
	}
	events := []any{}
	for i := 0; i < span.Events().Len(); i++ {
		e := span.Events().At(i)
		events = append(events, map[string]any{"name": e.Name(), "timestamp": iso(e.Timestamp()), "attributes": e.Attributes().AsRaw()})
	}
	links := []any{}
	for i := 0; i < span.Links().Len(); i++ {
		l := span.Links().At(i)
		links = append(links, map[string]any{
			"context":    map[string]any{"trace_id": "0x" + l.TraceID().String(), "span_id": "0x" + l.SpanID().String(), "trace_state": "[]"},
			"attributes": l.Attributes().AsRaw(),
		})
	}
	return map[string]any{
		"name":       span.Name(),
		"context":    map[string]any{"trace_id": "0x" + span.TraceID().String(), "span_id": "0x" + span.SpanID().String(), "trace_state": "[]"},
		"kind":       kind,
		"parent_id":  parent,
		"start_time": iso(span.StartTimestamp()),
		"end_time":   iso(span.EndTimestamp()),
		"status":     status,
		"attributes": span.Attributes().AsRaw(),
		"events":     events,
		"links":      links,
		"resource":   map[string]any{"attributes": res.Attributes().AsRaw(), "schema_url": ""},
	}
}

// consoleLog writes td as Gym's console output: each span prefixed with its
// server's name, every other span as the SDK's indent-4 object (prefixed on
// each line), log lines between.
func consoleLog(t *testing.T, td ptrace.Traces) []byte {
	t.Helper()
	var b bytes.Buffer
	n := 0
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		svc, _ := rs.Resource().Attributes().Get("service.name")
		prefix := "(" + strings.TrimPrefix(svc.Str(), "nemo-gym/") + ") "
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				obj := sdkJSON(rs.Resource(), spans.At(k))
				fmt.Fprintf(&b, "%sINFO:     127.0.0.1:5000 - \"POST /run HTTP/1.1\" 200 OK\n", prefix)
				var line []byte
				var err error
				if n%2 == 0 {
					line, err = json.Marshal(obj)
				} else {
					line, err = json.MarshalIndent(obj, "", "    ")
				}
				require.NoError(t, err)
				for _, l := range strings.Split(string(line), "\n") {
					b.WriteString(prefix + l + "\n")
				}
				n++
			}
		}
	}
	return b.Bytes()
}

// TestConsoleRoundTrip: every span of a golden input, written as Gym's
// console output (one-line and multi-line, prefixed, log lines between),
// reads back as the same span with the same resource.
func TestConsoleRoundTrip(t *testing.T) {
	for _, name := range []string{"default_preset_3_rollouts", "retry_links_previous_attempt", "per_rollout_preset"} {
		t.Run(name, func(t *testing.T) {
			td := goldenInput(t, name)
			rec := &recorder{}
			require.NoError(t, readConsole("gym.log", bytes.NewReader(consoleLog(t, td)), rec))
			assert.Empty(t, rec.skipped)
			got := ptrace.NewTraces()
			for _, b := range rec.batches {
				b.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
			}
			assert.Equal(t, flatten(td), flatten(got))
		})
	}
}

// TestReplayConsoleEqualsOTLP: the same spans replayed from Gym's console
// output and from the file exporter's OTLP/JSON give the same files.
func TestReplayConsoleEqualsOTLP(t *testing.T) {
	dir, _ := jobFromGolden(t, "default_preset_3_rollouts")
	opt, _ := testOptions(t, dir)
	_, err := run(context.Background(), opt)
	require.NoError(t, err)

	td := goldenInput(t, "default_preset_3_rollouts")
	logPath := filepath.Join(t.TempDir(), "gym.log")
	require.NoError(t, os.WriteFile(logPath, consoleLog(t, td), 0o640))
	out := filepath.Join(t.TempDir(), "captures")
	opt, _ = testOptions(t, logPath)
	opt.captureDir = out
	res, err := run(context.Background(), opt)
	require.NoError(t, err)
	assert.Zero(t, res.skippedLines)
	assert.Equal(t, withoutScope(t, readDir(t, filepath.Join(dir, "model-calls"))), withoutScope(t, readDir(t, out)))
}

// withoutScope is files with each JSON line's keys in order and without
// "scope", which Gym's console shape does not carry (service_map.md, not
// JSON, as it is).
func withoutScope(t *testing.T, files map[string][]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, lines := range files {
		for _, l := range lines {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				out[name] = append(out[name], l)
				continue
			}
			delete(m, "scope")
			b, err := json.Marshal(m)
			require.NoError(t, err)
			out[name] = append(out[name], string(b))
		}
		slices.Sort(out[name])
	}
	return out
}

func goldenInput(t *testing.T, name string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name, "input.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	return td
}

// flatten is every span of td with its resource, as the console shows them
// (times to the microsecond, no scope), in order.
func flatten(td ptrace.Traces) []map[string]any {
	var out []map[string]any
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				out = append(out, sdkJSON(rs.Resource(), spans.At(k)))
			}
		}
	}
	return out
}
