// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector/internal/metadatatest"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

var update = flag.Bool("update", false, "rewrite testdata/expected_metrics.json")

// The gymcapture processor's golden outputs: model-call spans annotated
// from their capture lines.
const processorGolden = "../../processor/gymcaptureprocessor/testdata"

var componentType = metadata.Type

// fixedClock stands still, and its ticker never fires: the tests flush by
// shutting down.
type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Unix(1_788_000_000, 0) }

func (fixedClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return make(chan time.Time), func() {}
}

// newTestConnectorWith starts a connector on clock with the default config
// adjusted by mutate.
func newTestConnectorWith(t *testing.T, clock timesource.Source, mutate func(*Config)) (*genAIConnector, *consumertest.MetricsSink, *componenttest.Telemetry) {
	t.Helper()
	sink := new(consumertest.MetricsSink)
	cfg := createDefaultConfig().(*Config)
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := connectortest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	c, err := newGenAIConnector(set, cfg, sink, clock)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	return c, sink, tel
}

func readTraces(t *testing.T, path string) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	return td
}

// captureTokens sums the usage of every capture line of the processor's
// golden cases that a span joined (the hostile case's oversized line none).
func captureTokens(t *testing.T, cases []string) (in, out int64) {
	t.Helper()
	for _, name := range cases {
		files, _ := filepath.Glob(filepath.Join(processorGolden, name, "*", "*.capture.jsonl"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, line := range bytes.Split(b, []byte("\n")) {
				var l struct {
					Response struct {
						Usage struct {
							In  any `json:"input_tokens"`
							Out any `json:"output_tokens"`
						} `json:"usage"`
					} `json:"response"`
				}
				if json.Unmarshal(line, &l) != nil || len(line) > 8192 {
					continue
				}
				if v, ok := l.Response.Usage.In.(float64); ok {
					in += int64(v)
				}
				if v, ok := l.Response.Usage.Out.(float64); ok && v >= 0 {
					out += int64(v)
				}
			}
		}
	}
	return in, out
}

// Every capture line is counted once though three spans carry it, and the
// token sums equal the captures'.
func TestMetricsFromAnnotatedSpans(t *testing.T) {
	cases := []string{"capture_before_span", "capture_after_span_within_wait", "capture_never", "same_model_two_calls", "retried_call", "hostile_capture"}
	// The GenAI metrics alone: the time split has its test (timesplit_test.go).
	c, sink, tel := newTestConnectorWith(t, fixedClock{}, func(c *Config) { c.TimeSplit.Enabled = false })
	annotated := int64(0)
	for _, name := range cases {
		td := readTraces(t, filepath.Join(processorGolden, name, "expected.json"))
		annotated += countSpansWith(td, gymconv.ModelCallIDAttribute)
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		// A replay of the same spans counts nothing twice.
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
	}
	require.NoError(t, c.Shutdown(context.Background()))
	require.Len(t, sink.AllMetrics(), 1)
	md := sink.AllMetrics()[0]

	wantIn, wantOut := captureTokens(t, cases)
	got := map[string]float64{}
	counts := map[string]uint64{}
	eachPoint(md, metricTokenUsage, func(attrs pcommon.Map, dp pmetric.HistogramDataPoint) {
		typ, _ := attrs.Get(attrTokenType)
		got[typ.Str()] += dp.Sum()
		counts[typ.Str()] += dp.Count()
	})
	assert.Equal(t, float64(wantIn), got["input"])
	assert.Equal(t, float64(wantOut), got["output"])
	// Model calls with usage: 1 + 1 + 2 + 1 (the retry) + 1 (resp_5a; the
	// hostile line's usage is not numbers).
	assert.Equal(t, uint64(6), counts["input"])

	calls := uint64(0)
	eachPoint(md, metricDuration, func(_ pcommon.Map, dp pmetric.HistogramDataPoint) { calls += dp.Count() })
	// Lines joined: 1 + 1 + 2 + 2 + 2 (resp_5a and the hostile one).
	assert.Equal(t, uint64(8), calls)
	metadatatest.AssertEqualConnectorGymgenaiModelCalls(t, tel, []metricdata.DataPoint[int64]{{Value: 8}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorGymgenaiDuplicateSpans(t, tel, []metricdata.DataPoint[int64]{{Value: 2*annotated - 8}}, metricdatatest.IgnoreTimestamp())

	compareGolden(t, md)
}

func countSpansWith(td ptrace.Traces, key string) int64 {
	n := int64(0)
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		for j := 0; j < td.ResourceSpans().At(i).ScopeSpans().Len(); j++ {
			spans := td.ResourceSpans().At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if _, ok := spans.At(k).Attributes().Get(key); ok {
					n++
				}
			}
		}
	}
	return n
}

func eachPoint(md pmetric.Metrics, name string, f func(pcommon.Map, pmetric.HistogramDataPoint)) {
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == name {
			dps := ms.At(i).Histogram().DataPoints()
			for j := 0; j < dps.Len(); j++ {
				f(dps.At(j).Attributes(), dps.At(j))
			}
		}
	}
}

// compareGolden compares md, its timestamps zeroed, with
// testdata/expected_metrics.json.
func compareGolden(t *testing.T, md pmetric.Metrics) {
	t.Helper()
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		switch m.Type() {
		case pmetric.MetricTypeHistogram:
			for j := 0; j < m.Histogram().DataPoints().Len(); j++ {
				m.Histogram().DataPoints().At(j).SetStartTimestamp(0)
				m.Histogram().DataPoints().At(j).SetTimestamp(0)
			}
		case pmetric.MetricTypeSum:
			for j := 0; j < m.Sum().DataPoints().Len(); j++ {
				m.Sum().DataPoints().At(j).SetStartTimestamp(0)
				m.Sum().DataPoints().At(j).SetTimestamp(0)
			}
		}
	}
	b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, b, "", " "))
	path := filepath.Join("testdata", "expected_metrics.json")
	if *update {
		require.NoError(t, os.WriteFile(path, append(pretty.Bytes(), '\n'), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write it")
	assert.JSONEq(t, string(want), pretty.String())
}

// Past max_series, new attribute sets share one overflow series.
func TestSeriesBound(t *testing.T) {
	s := newSeries[int64](2)
	*s.get("m", "a")++
	*s.get("m", "b")++
	*s.get("m", "c")++
	*s.get("m", "d")++
	*s.get("m", "a")++
	var got []int64
	s.each(func(attrs pcommon.Map, v *int64) { got = append(got, *v) })
	assert.Equal(t, []int64{2, 1, 2}, got)
}

func TestDedupForgetsOldest(t *testing.T) {
	d := newDedup(2)
	assert.True(t, d.add("a"))
	assert.True(t, d.add("b"))
	assert.False(t, d.add("a"))
	assert.True(t, d.add("c")) // forgets a
	assert.True(t, d.add("a"))
	assert.False(t, d.add("c"))
}

// A call whose series is past max_series counts into the overflow series,
// and is counted; a flush the next consumer refuses is counted.
func TestOwnMetrics(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := connectortest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	cfg := createDefaultConfig().(*Config)
	cfg.MaxSeries = 1
	c, err := newGenAIConnector(set, cfg, consumertest.NewErr(errors.New("refused")), fixedClock{})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, model := range []string{"a", "b", "b"} {
		s := spans.AppendEmpty()
		s.SetStartTimestamp(1)
		s.SetEndTimestamp(2)
		s.Attributes().PutStr(attrOperation, "chat")
		s.Attributes().PutStr(attrRequestModel, model)
		s.Attributes().PutStr(gymconv.ModelCallIDAttribute, fmt.Sprintf("call-%d", min(i, 1)))
	}
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.Shutdown(context.Background()))
	metadatatest.AssertEqualConnectorGymgenaiModelCalls(t, tel, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorGymgenaiDuplicateSpans(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorGymgenaiOverflowCalls(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualConnectorGymgenaiFlushFailures(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
