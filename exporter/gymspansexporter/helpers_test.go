// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = t.TempDir()
	cfg.ServiceMap.Enabled = false
	if mutate != nil {
		mutate(cfg)
	}
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	e, err := newSpansExporter(set, cfg)
	require.NoError(t, err)
	return e, tel
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
// each (a gym.rollout root with CLIENT/SERVER/INTERNAL children), from
// agent, model and resources processes of one run. seed makes ids unique
// across calls.
func gymTraces(seed uint64, rollouts, spansPer int) ptrace.Traces {
	td := ptrace.NewTraces()
	services := []string{"nemo-gym/simple_agent", "nemo-gym/policy_model", "nemo-gym/example_single_tool_call"}
	scopes := make([]ptrace.SpanSlice, len(services))
	for i, svc := range services {
		rs := td.ResourceSpans().AppendEmpty()
		res := rs.Resource().Attributes()
		res.PutStr("service.name", svc)
		res.PutStr("nemo.gym.service_group", "nemo-gym")
		res.PutStr("nemo.run.id", "4f2a91c0be31")
		res.PutStr("service.instance.id", "4f2a91c0be31-rank0")
		res.PutStr("host.name", "node-7")
		res.PutInt("process.pid", int64(4000+i))
		res.PutInt("dl.rank", 0)
		res.PutStr("telemetry.sdk.language", "python")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("nemo.lens.helpers")
		ss.Scope().SetVersion("0.2.0")
		scopes[i] = ss.Spans()
	}
	base := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	for r := 0; r < rollouts; r++ {
		rid := fmt.Sprintf("%d-%d", r/4, r%4)
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], seed+1)
		binary.BigEndian.PutUint64(tid[8:], uint64(r)+1)
		var root pcommon.SpanID
		for s := 0; s < spansPer; s++ {
			svc := [3]int{2, 0, 1}[s%3] // verify: resources; CLIENT: agent; SERVER: model
			if s == 0 {
				svc = 0
			}
			span := scopes[svc].AppendEmpty()
			span.SetTraceID(tid)
			var sid pcommon.SpanID
			binary.BigEndian.PutUint64(sid[:], seed<<40|uint64(r)<<16|uint64(s)+1)
			span.SetSpanID(sid)
			start := base.Add(time.Duration(r)*time.Second + time.Duration(s)*time.Millisecond)
			span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(spansPer-s) * 3 * time.Millisecond)))
			a := span.Attributes()
			a.PutStr("nemo.gym.rollout.id", rid)
			switch {
			case s == 0:
				root = sid
				span.SetName("gym.rollout")
				a.PutStr("nemo.gym.server.name", "simple_agent")
			case s%3 == 1:
				span.SetParentSpanID(root)
				span.SetName("HTTP POST")
				span.SetKind(ptrace.SpanKindClient)
				a.PutStr("http.request.method", "POST")
				a.PutStr("url.full", "http://127.0.0.1:8001/ng-rollout/"+rid+"/v1/responses")
				a.PutInt("http.response.status_code", 200)
			case s%3 == 2:
				span.SetParentSpanID(root)
				span.SetName("POST")
				span.SetKind(ptrace.SpanKindServer)
				a.PutStr("http.target", "/ng-rollout/"+rid+"/v1/responses")
				a.PutStr("http.method", "POST")
				a.PutInt("http.status_code", 200)
			default:
				span.SetParentSpanID(root)
				span.SetName("gym.verify")
				a.PutStr("nemo.gym.server.name", "example_single_tool_call")
				a.PutDouble("nemo.gym.cpu.percent", 12.5)
				if r%7 == 3 {
					span.Status().SetCode(ptrace.StatusCodeError)
					span.Status().SetMessage("ValueError: judge failed")
					ev := span.Events().AppendEmpty()
					ev.SetName("exception")
					ev.SetTimestamp(span.EndTimestamp())
					ev.Attributes().PutStr("exception.type", "ValueError")
					ev.Attributes().PutStr("exception.message", "judge failed")
				}
			}
		}
	}
	return td
}

// walkFiles lists every path under dir, relative to it.
func walkFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	}))
	return out
}
