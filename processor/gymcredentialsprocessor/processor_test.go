// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcredentialsprocessor

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcredentialsprocessor/internal/metadata"
)

const secretMark = "-secret-"

// golden is internal/credentials' golden input of a signal, and how many
// values in it must go (each spelt *-secret-N).
func golden(t *testing.T, signal string) ([]byte, int) {
	b, err := os.ReadFile("../../internal/credentials/testdata/" + signal + "_in.json")
	require.NoError(t, err)
	return b, strings.Count(string(b), secretMark)
}

// settings are processor settings whose metrics and logs the test reads.
func settings(t *testing.T) (processor.Settings, *componenttest.Telemetry, *observer.ObservedLogs) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	core, logs := observer.New(zap.InfoLevel)
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	return set, tel, logs
}

func removedCount(t *testing.T, tel *componenttest.Telemetry) int64 {
	m, err := tel.GetMetric(removedMetric)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}

// checkLogs: one line per key removed, naming the key, never a value.
func checkLogs(t *testing.T, logs *observer.ObservedLogs, keys int) {
	assert.Equal(t, keys, logs.Len())
	for _, e := range logs.All() {
		assert.NotEmpty(t, e.ContextMap()["key"])
		assert.NotContains(t, e.Message+" "+e.ContextMap()["key"].(string), secretMark)
	}
}

// TestTraces: the copy handed on holds no credential, the caller's batch
// (read-only, as a fanout shares it) is unchanged, every removal is counted.
func TestTraces(t *testing.T) {
	in, secrets := golden(t, "traces")
	set, tel, logs := settings(t)
	sink := new(consumertest.TracesSink)
	p, err := NewFactory().CreateTraces(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(in)
	require.NoError(t, err)
	td.MarkReadOnly()
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.Len(t, sink.AllTraces(), 1)
	out, err := (&ptrace.JSONMarshaler{}).MarshalTraces(sink.AllTraces()[0])
	require.NoError(t, err)
	assert.NotContains(t, string(out), secretMark)
	assert.Contains(t, string(out), "gen_ai.usage.input_tokens")
	assert.Equal(t, td.SpanCount(), sink.SpanCount())
	assert.True(t, credentials.Default().InTraces(td), "the input was changed")
	assert.Equal(t, int64(secrets), removedCount(t, tel))
	checkLogs(t, logs, secrets) // every key in the golden input is another

	// A second batch: counted again, not logged again.
	td2, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(in)
	require.NoError(t, err)
	require.NoError(t, p.ConsumeTraces(context.Background(), td2))
	assert.Equal(t, int64(2*secrets), removedCount(t, tel))
	assert.Equal(t, secrets, logs.Len())
}

func TestMetrics(t *testing.T) {
	in, secrets := golden(t, "metrics")
	set, tel, logs := settings(t)
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(in)
	require.NoError(t, err)
	md.MarkReadOnly()
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	out, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(sink.AllMetrics()[0])
	require.NoError(t, err)
	assert.NotContains(t, string(out), secretMark)
	assert.Contains(t, string(out), "vllm_num_requests_running")
	assert.True(t, credentials.Default().InMetrics(md), "the input was changed")
	assert.Equal(t, int64(secrets), removedCount(t, tel))
	checkLogs(t, logs, secrets)
}

func TestLogs(t *testing.T) {
	in, secrets := golden(t, "logs")
	set, tel, logs := settings(t)
	sink := new(consumertest.LogsSink)
	p, err := NewFactory().CreateLogs(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(in)
	require.NoError(t, err)
	ld.MarkReadOnly()
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	out, err := (&plog.JSONMarshaler{}).MarshalLogs(sink.AllLogs()[0])
	require.NoError(t, err)
	assert.NotContains(t, string(out), secretMark)
	assert.Contains(t, string(out), "rollout started")
	assert.True(t, credentials.Default().InLogs(ld), "the input was changed")
	assert.Equal(t, int64(secrets), removedCount(t, tel))
	checkLogs(t, logs, secrets)
}

// TestOffPassesThrough: with both lists empty the data passes as it came
// (the check above can fail), and nothing is counted.
func TestOffPassesThrough(t *testing.T) {
	in, _ := golden(t, "logs")
	set, tel, _ := settings(t)
	sink := new(consumertest.LogsSink)
	cfg := &Config{Config: credentials.Config{Keys: []string{}, Suffixes: []string{}}}
	p, err := NewFactory().CreateLogs(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(in)
	require.NoError(t, err)
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	out, err := (&plog.JSONMarshaler{}).MarshalLogs(sink.AllLogs()[0])
	require.NoError(t, err)
	assert.Contains(t, string(out), secretMark)
	assert.Equal(t, int64(0), removedCount(t, tel))
}
