// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymforwardconnector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector/internal/metadatatest"
)

// errQueueFull is what the exporter helper returns when its queue is full.
var errQueueFull = errors.New("sending queue is full")

// clock is a fake clock the tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// backend is the forwarding pipeline: it refuses while down, else takes
// into sink; it records when it was offered something.
type backend struct {
	clock *clock
	sink  consumertest.TracesSink

	mu     sync.Mutex
	down   bool
	offers []time.Time
}

func (b *backend) setDown(down bool) {
	b.mu.Lock()
	b.down = down
	b.mu.Unlock()
}

func (b *backend) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *backend) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b.mu.Lock()
	b.offers = append(b.offers, b.clock.Now())
	down := b.down
	b.mu.Unlock()
	if down {
		return errQueueFull
	}
	return b.sink.ConsumeTraces(ctx, td)
}

type fixture struct {
	clock *clock
	next  *backend
	conn  *tracesForwarder
	tel   *componenttest.Telemetry
	logs  *observer.ObservedLogs
}

func newFixture(t *testing.T, destination string) *fixture {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	c := newClock()
	f, err := newForwarder(set, &Config{Destination: destination}, signalTraces, c.Now)
	require.NoError(t, err)
	next := &backend{clock: c}
	return &fixture{clock: c, next: next, conn: &tracesForwarder{forwarder: f, next: next}, tel: tel, logs: logs}
}

func spans(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for range n {
		ss.AppendEmpty().SetName("gym.rollout")
	}
	return td
}

// consume sends n spans and requires that nothing comes back upstream.
func (x *fixture) consume(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, x.conn.ConsumeTraces(context.Background(), spans(n)), "a refusal never goes upstream")
}

func (x *fixture) dropped(t *testing.T) int64 {
	t.Helper()
	m, err := x.tel.GetMetric("otelcol_connector_gymforward_spans_dropped")
	if err != nil {
		return 0
	}
	return m.Data.(metricdata.Sum[int64]).DataPoints[0].Value
}

// A backend that is down costs forwarded spans only: nothing goes upstream;
// after a refusal the connector offers nothing for a backoff that doubles up
// to 15 s; it logs at the first refusal and then at most every 10 s, each
// line with what was not forwarded since the one before, and once the
// backend takes again, one info line with the whole episode's count, the
// metric's.
func TestBackendDownThenUp(t *testing.T) {
	x := newFixture(t, "http://127.0.0.1:6006/v1/traces")
	x.next.setDown(true)
	start := x.clock.Now()
	sent := 0
	for range 200 { // 100 s, a batch of 3 every 500 ms
		x.consume(t, 3)
		sent += 3
		x.clock.advance(500 * time.Millisecond)
	}
	var gaps []time.Duration
	for i := 1; i < len(x.next.offers); i++ {
		gaps = append(gaps, x.next.offers[i].Sub(x.next.offers[i-1]))
	}
	assert.Equal(t, []time.Duration{1, 2, 4, 8, 15, 15, 15, 15, 15}, scaled(gaps, time.Second), "offers at backoff while it refuses")
	assert.Equal(t, int64(sent), x.dropped(t))
	assert.Zero(t, x.next.sink.SpanCount())

	lines := x.logs.FilterLevelExact(zapcore.ErrorLevel).All()
	require.Len(t, lines, 10, "the first refusal, then one line every 10 s")
	assert.Equal(t, "forwarding spans to http://127.0.0.1:6006/v1/traces fails: sending queue is full; 3 spans not forwarded. "+
		"Local capture goes on: the pipeline's other exporters have them; only forwarding misses them. "+
		"A full sending queue means the backend has not taken what it was sent (the forwarding exporter's \"Exporting failed\" lines say what it answered). "+
		"Next attempt in 1s; until then nothing is forwarded (otelcol_connector_gymforward_spans_dropped)", lines[0].Message)
	logged := int64(0)
	for i, l := range lines {
		fields := l.ContextMap()
		logged += fields["not_forwarded"].(int64)
		assert.Equal(t, logged, fields["not_forwarded_total"], "line %d", i)
		if i > 0 {
			assert.Contains(t, l.Message, "forwarding spans to http://127.0.0.1:6006/v1/traces still fails: sending queue is full; 60 spans not forwarded since the last line, ")
			assert.Contains(t, l.Message, "since "+start.Format(time.RFC3339))
		}
	}

	// Up again: the next offer (at the end of the backoff) is taken, the
	// failure ends, and every batch after it is offered at once.
	x.next.setDown(false)
	for range 40 {
		x.consume(t, 3)
		sent += 3
		x.clock.advance(500 * time.Millisecond)
	}
	dropped := x.dropped(t)
	assert.Equal(t, int64(sent), dropped+int64(x.next.sink.SpanCount()), "every span forwarded or counted")
	infos := x.logs.FilterLevelExact(zapcore.InfoLevel).All()
	require.Len(t, infos, 1)
	assert.Contains(t, infos[0].Message, fmt.Sprintf("forwarding spans to http://127.0.0.1:6006/v1/traces works again; %d spans were not forwarded while it failed", dropped))
	assert.Equal(t, dropped, infos[0].ContextMap()["not_forwarded"])
	assert.Less(t, x.next.sink.SpanCount(), 120, "what came during the last backoff was not forwarded")
	assert.Greater(t, x.next.sink.SpanCount(), 120-3*2*15, "at most a backoff's worth")

	// Nothing failing: shutdown says nothing.
	require.NoError(t, x.conn.Shutdown(context.Background()))
	assert.Len(t, x.logs.All(), 12)

	// A new failure starts over: logged at once, 1 s of backoff.
	before := len(x.next.offers)
	x.next.setDown(true)
	x.consume(t, 5)
	x.clock.advance(999 * time.Millisecond)
	x.consume(t, 5)
	assert.Len(t, x.next.offers, before+1)
	x.clock.advance(time.Millisecond)
	x.consume(t, 5)
	assert.Len(t, x.next.offers, before+2)
	assert.Len(t, x.logs.FilterLevelExact(zapcore.ErrorLevel).All(), 12, "one more at 100 s (10 s after the last), and the new failure's first")
	metadatatest.AssertEqualConnectorGymforwardSpansDropped(t, x.tel, []metricdata.DataPoint[int64]{{Value: dropped + 15}}, metricdatatest.IgnoreTimestamp())

	// Shutdown while it fails says what the lines have not said yet.
	require.NoError(t, x.conn.Shutdown(context.Background()))
	lines = x.logs.FilterLevelExact(zapcore.ErrorLevel).All()
	require.Len(t, lines, 13)
	last := lines[12]
	assert.Equal(t, "forwarding spans to http://127.0.0.1:6006/v1/traces failed until shutdown: sending queue is full; "+
		"15 spans were not forwarded since 2026-08-21T12:02:00Z, 10 of them since the last line (otelcol_connector_gymforward_spans_dropped)", last.Message)
	assert.Equal(t, int64(15), lines[11].ContextMap()["not_forwarded"].(int64)+last.ContextMap()["not_forwarded"].(int64), "the lines of a failure add up to its count")
}

func scaled(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

// Metrics and logs: the same, counted in points and records, each in its
// own metric; without a destination the lines name the connector.
func TestMetricsAndLogs(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	refusing := consumertest.NewErr(errQueueFull)
	ctx := context.Background()

	mf, err := newForwarder(set, &Config{}, signalMetrics, newClock().Now)
	require.NoError(t, err)
	mc := &metricsForwarder{forwarder: mf, next: refusing}
	md := pmetric.NewMetrics()
	g := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge()
	g.DataPoints().AppendEmpty()
	g.DataPoints().AppendEmpty()
	require.NoError(t, mc.ConsumeMetrics(ctx, md))
	require.NoError(t, mc.ConsumeMetrics(ctx, md))
	metadatatest.AssertEqualConnectorGymforwardMetricPointsDropped(t, tel, []metricdata.DataPoint[int64]{{Value: 4}}, metricdatatest.IgnoreTimestamp())

	lf, err := newForwarder(set, &Config{}, signalLogs, newClock().Now)
	require.NoError(t, err)
	lc := &logsForwarder{forwarder: lf, next: refusing}
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	require.NoError(t, lc.ConsumeLogs(ctx, ld))
	metadatatest.AssertEqualConnectorGymforwardLogRecordsDropped(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())

	lines := logs.All()
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0].Message, "forwarding metric points through gymforward fails: sending queue is full; 2 metric points not forwarded."), lines[0].Message)
	assert.True(t, strings.HasPrefix(lines[1].Message, "forwarding log records through gymforward fails: sending queue is full; 1 log records not forwarded."), lines[1].Message)
	assert.Contains(t, lines[1].Message, "(otelcol_connector_gymforward_log_records_dropped)")
	assert.False(t, mc.Capabilities().MutatesData)
}

// A refusal's text is bounded in the lines: it may carry what the backend
// answered.
func TestCauseBounded(t *testing.T) {
	x := newFixture(t, "")
	long := errors.New("HTTP 503, Message=" + strings.Repeat("<script>", 1000))
	c := &tracesForwarder{forwarder: x.conn.forwarder, next: consumertest.NewErr(long)}
	require.NoError(t, c.ConsumeTraces(context.Background(), spans(1)))
	lines := x.logs.All()
	require.Len(t, lines, 1)
	assert.Less(t, len(lines[0].Message), maxCause+1000)
	assert.Len(t, lines[0].ContextMap()["error"], maxCause)
}

// Under concurrent batches and a backend that comes and goes, every span is
// either forwarded or counted, and nothing goes upstream (-race).
func TestEverySpanForwardedOrCounted(t *testing.T) {
	x := newFixture(t, "")
	var wg sync.WaitGroup
	const workers, batches = 8, 500
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				if w == 0 && i%50 == 0 {
					x.next.setDown(i%100 == 0)
				}
				x.consume(t, 1+i%4)
				x.clock.advance(37 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	sent := workers * (batches / 4) * (1 + 2 + 3 + 4)
	assert.Equal(t, int64(sent), x.dropped(t)+int64(x.next.sink.SpanCount()))
	assert.Positive(t, x.dropped(t))
	assert.Positive(t, x.next.sink.SpanCount())
}

// TestStartSaysWhereTo: a user sees in the log that forwarding is on, and to where.
func TestStartSaysWhereTo(t *testing.T) {
	x := newFixture(t, "http://127.0.0.1:6006/v1/traces")
	require.NoError(t, x.conn.Start(context.Background(), componenttest.NewNopHost()))
	require.Equal(t, 1, x.logs.Len())
	assert.Equal(t, "forwarding traces to http://127.0.0.1:6006/v1/traces", x.logs.All()[0].Message)
	assert.Equal(t, zapcore.InfoLevel, x.logs.All()[0].Level)
}
