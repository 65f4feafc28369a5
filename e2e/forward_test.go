// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/config"
)

// embeddedDefaultOn runs the binary without --config (the embedded default,
// and its forwarding overlay when env sets the variable) on p's ports
// instead of its fixed ones, so it runs beside other tests.
func embeddedDefaultOn(p ports) []string {
	return []string{
		fmt.Sprintf("--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:%d", p.GRPC),
		fmt.Sprintf("--set=receivers::otlp::protocols::http::endpoint=127.0.0.1:%d", p.HTTP),
		fmt.Sprintf("--set=extensions::health_check::endpoint=127.0.0.1:%d", p.Health),
		fmt.Sprintf("--set=extensions::gymview::endpoint=127.0.0.1:%d", p.View),
		"--set=service::telemetry::metrics::level=none",
	}
}

// TestForwarding (design §6): with OTELCOL_GYM_EXPORTER_OTLP_ENDPOINT set,
// the embedded default sends traces, metrics and logs to that OTLP endpoint
// (a second collector here) with the headers of
// OTELCOL_GYM_EXPORTER_OTLP_HEADERS, besides writing its capture dir.
func TestForwarding(t *testing.T) {
	dir := t.TempDir()
	rp := newPorts(t)
	tmpl, err := os.ReadFile(filepath.Join("testdata", "forward_receiver.yaml"))
	require.NoError(t, err)
	receiver := startCollector(t, rp, nil, "--config", writeFile(t, dir, "receiver.yaml", rp.expand(string(tmpl), dir)))

	p := newPorts(t)
	captureDir := filepath.Join(dir, "captures")
	col := startCollector(t, p, []string{
		"NEMO_GYM_CAPTURE_DIR=" + captureDir,
		fmt.Sprintf("%s=http://127.0.0.1:%d", config.ForwardEndpointEnv, rp.HTTP),
		config.ForwardHeadersEnv + "=x-gym-test=forwarded%20by%20gym",
	}, embeddedDefaultOn(p)...)

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("gym.rollout")
	span.SetTraceID(pcommon.TraceID{1, 2, 3})
	span.SetSpanID(pcommon.SpanID{4, 5, 6, 7, 8, 9, 10, 11})
	now := time.Now()
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	span.Attributes().PutStr("nemo.gym.rollout.id", "fwd-0")
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gym.e2e.forwarded")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(now))
	dp.SetIntValue(36)
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("gym e2e forwarded log")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(now))

	post := func(path string, body []byte, err error) {
		t.Helper()
		require.NoError(t, err)
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", p.HTTP, path), "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	body, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	post("/v1/traces", body, err)
	body, err = (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	post("/v1/metrics", body, err)
	body, err = (&plog.JSONMarshaler{}).MarshalLogs(ld)
	post("/v1/logs", body, err)

	contains := func(file, s string) func() bool {
		return func() bool {
			b, err := os.ReadFile(filepath.Join(dir, file))
			return err == nil && strings.Contains(string(b), s)
		}
	}
	pollUntil(t, 30*time.Second, "the span at the receiver", contains("traces.jsonl", "0405060708090a0b"))
	pollUntil(t, 30*time.Second, "the metric at the receiver", contains("metrics.jsonl", "gym.e2e.forwarded"))
	pollUntil(t, 30*time.Second, "the log at the receiver", contains("logs.jsonl", "gym e2e forwarded log"))
	traces, err := os.ReadFile(filepath.Join(dir, "traces.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(traces), `"forwarded.x-gym-test","value":{"stringValue":"forwarded by gym"}`, "the header arrived")
	assert.Contains(t, string(traces), `"stringValue":"invoke_agent"`, "the span as the pipeline made it (design §4.7)")
	pollUntil(t, 30*time.Second, "the span in its rollout file", func() bool {
		_, err := os.Stat(filepath.Join(captureDir, "fwd-0.spans.jsonl"))
		return err == nil
	})
	require.NoError(t, col.stop())
	require.NoError(t, receiver.stop())
}

// TestForwardingUnsetChangesNothing (design §3, §6): without the variable
// (or with it empty) the embedded default's effective configuration is
// config/standalone.yaml's, byte for byte; with it, it is that plus the
// forwarding exporter; a malformed header is refused before the collector
// starts, naming the variable.
func TestForwardingUnsetChangesNothing(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("..", "config", "standalone.yaml"))
	require.NoError(t, err)
	printConfig := func(env []string, args ...string) string {
		out, err := runCmd(t, time.Minute, env, collectorBinary(t), append([]string{"print-config", "--mode=unredacted"}, args...)...)
		require.NoError(t, err, out)
		return out
	}
	want := printConfig([]string{config.ForwardEndpointEnv + "="}, "--config", file)
	assert.Equal(t, want, printConfig([]string{config.ForwardEndpointEnv + "="}), "unset")
	forwarding := printConfig([]string{config.ForwardEndpointEnv + "=http://127.0.0.1:6006"})
	assert.NotEqual(t, want, forwarding)
	assert.Equal(t, 4, strings.Count(forwarding, config.ForwardExporter), "the exporter and the three pipelines that use it")
	out, err := runCmd(t, time.Minute, []string{config.ForwardEndpointEnv + "=http://127.0.0.1:6006", config.ForwardHeadersEnv + "=oops"}, collectorBinary(t))
	require.Error(t, err)
	assert.Contains(t, out, config.ForwardHeadersEnv)
}
