// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	conventions "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

const scopeName = "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

// The metrics (design §4.7): the GenAI conventions' names, and ours where
// they have none.
const (
	metricTokenUsage = "gen_ai.client.token.usage"
	metricDuration   = "gen_ai.client.operation.duration"
	metricTTFT       = "gen_ai.client.operation.time_to_first_chunk"
	metricErrors     = "nemo.gym.model_call.errors"
)

// Attribute names on the points.
var (
	attrOperation    = string(conventions.GenAIOperationNameKey)
	attrRequestModel = string(conventions.GenAIRequestModelKey)
	attrTokenType    = string(conventions.GenAITokenTypeKey)
	attrErrorType    = string(conventions.ErrorTypeKey)
	tokenInput       = conventions.GenAITokenTypeInput.Value.AsString()
	tokenOutput      = conventions.GenAITokenTypeOutput.Value.AsString()
)

// genAIConnector turns the model calls the gymcapture processor annotated
// into GenAI metrics per run and model: ConsumeTraces → one model call per
// nemo.gym.model_call.id (dedup) → cumulative series → every
// metrics_flush_interval (and at shutdown) → next. A span without the
// processor's attributes is not looked at.
type genAIConnector struct {
	cfg    *Config
	next   consumer.Metrics
	logger *zap.Logger
	tel    *telemetry
	clock  timesource.Source

	mu       sync.Mutex
	start    pcommon.Timestamp
	seen     dedup
	tokens   *series[histogram]
	duration *series[histogram]
	ttft     *series[histogram]
	errors   *series[int64]
	split    *rolloutSplits // nil with time_split off
	dirty    bool

	stop, done chan struct{}
}

func newGenAIConnector(set connector.Settings, cfg *Config, next consumer.Metrics, clock timesource.Source) (*genAIConnector, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &genAIConnector{
		cfg: cfg, next: next, logger: set.Logger, tel: tel, clock: clock,
		start:  pcommon.NewTimestampFromTime(clock.Now()),
		seen:   newDedup(cfg.DedupWindow),
		tokens: newSeries[histogram](cfg.MaxSeries), duration: newSeries[histogram](cfg.MaxSeries),
		ttft: newSeries[histogram](cfg.MaxSeries), errors: newSeries[int64](cfg.MaxSeries),
		split: newRolloutSplits(cfg),
	}, nil
}

func (c *genAIConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *genAIConnector) Start(_ context.Context, host component.Host) error {
	if c.split != nil {
		c.split.start(c.clock.Now(), host)
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	tick, stop := c.clock.NewTicker(c.cfg.MetricsFlushInterval)
	go func() {
		defer close(c.done)
		defer stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick:
				c.flush(context.Background())
			}
		}
	}()
	return nil
}

func (c *genAIConnector) Shutdown(ctx context.Context) error {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	c.flush(ctx)
	c.tel.Shutdown()
	return nil
}

func (c *genAIConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var n counts
	c.mu.Lock()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		run := str(rs.Resource().Attributes(), c.cfg.RunAttribute)
		var proc timesplit.Process
		var rollout string
		if c.split != nil {
			proc, rollout = c.split.process(rs.Resource().Attributes())
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				c.observe(run, spans.At(k), &n)
				if c.split != nil {
					c.split.observe(run, proc, rollout, spans.At(k), &n)
				}
			}
		}
	}
	if c.split != nil {
		c.split.finishRoots(&n)
		c.dirty = c.dirty || n.splits[timesplit.Computed] > 0
	}
	c.mu.Unlock()
	c.tel.record(ctx, &n)
	return nil
}

// observe records one span if it is a model call seen for the first time.
func (c *genAIConnector) observe(run string, span ptrace.Span, n *counts) {
	attrs := span.Attributes()
	op := str(attrs, attrOperation)
	id := str(attrs, gymconv.ModelCallIDAttribute)
	if op == "" && id == "" {
		return
	}
	if id != "" && !c.seen.add(id) {
		n.duplicates++
		return
	}
	n.calls++
	overflowed := false
	if run == "" {
		run = str(attrs, gymconv.SpanRunAttribute)
	}
	c.dirty = true
	model, errType := str(attrs, attrRequestModel), str(attrs, attrErrorType)
	for _, t := range [...]struct{ key, typ string }{
		{string(conventions.GenAIUsageInputTokensKey), tokenInput},
		{string(conventions.GenAIUsageOutputTokensKey), tokenOutput},
	} {
		if v, ok := attrs.Get(t.key); ok && v.Type() == pcommon.ValueTypeInt && v.Int() >= 0 {
			h := c.tokens.get(gymconv.RunAttribute, run, attrOperation, op, attrRequestModel, model, attrTokenType, t.typ)
			h.observe(tokenBounds, float64(v.Int()))
			overflowed = overflowed || c.tokens.isOverflow(h)
		}
	}
	if end, start := span.EndTimestamp(), span.StartTimestamp(); end >= start && start != 0 {
		h := c.duration.get(gymconv.RunAttribute, run, attrOperation, op, attrRequestModel, model, attrErrorType, errType)
		h.observe(durationBounds, float64(end-start)/1e9)
		overflowed = overflowed || c.duration.isOverflow(h)
	}
	if v, ok := attrs.Get(gymconv.ModelCallTTFTAttribute); ok && v.Type() == pcommon.ValueTypeDouble && v.Double() >= 0 {
		h := c.ttft.get(gymconv.RunAttribute, run, attrOperation, op, attrRequestModel, model)
		h.observe(ttftBounds, v.Double()/1000)
		overflowed = overflowed || c.ttft.isOverflow(h)
	}
	if errType != "" {
		e := c.errors.get(gymconv.RunAttribute, run, attrOperation, op, attrRequestModel, model, attrErrorType, errType)
		*e++
		overflowed = overflowed || c.errors.isOverflow(e)
	}
	if overflowed {
		n.overflowed++
	}
}

// flush sends every series, cumulative, when anything was recorded.
func (c *genAIConnector) flush(ctx context.Context) {
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return
	}
	md := c.metricsLocked(pcommon.NewTimestampFromTime(c.clock.Now()))
	c.mu.Unlock()
	if err := c.next.ConsumeMetrics(ctx, md); err != nil {
		c.tel.ConnectorGymgenaiFlushFailures.Add(ctx, 1)
		c.logger.Warn("The next consumer refused the GenAI metrics; the next flush sends them again (they are cumulative)", zap.Error(err))
	}
}

func (c *genAIConnector) metricsLocked(now pcommon.Timestamp) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	hist := func(name, unit, desc string, s *series[histogram], bounds []float64) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		m.SetDescription(desc)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		s.each(func(attrs pcommon.Map, v *histogram) {
			dp := h.DataPoints().AppendEmpty()
			attrs.CopyTo(dp.Attributes())
			dp.SetStartTimestamp(c.start)
			dp.SetTimestamp(now)
			v.point(dp, bounds)
		})
	}
	hist(metricTokenUsage, "{token}", "Tokens used by Gym's model calls, by type (input, output), per run and model.", c.tokens, tokenBounds)
	hist(metricDuration, "s", "Duration of Gym's model calls (of the first of their spans seen), per run and model.", c.duration, durationBounds)
	hist(metricTTFT, "s", "Time to first token of Gym's model calls (the capture's latency_ttft_ms), per run and model.", c.ttft, ttftBounds)
	if c.split != nil && len(c.split.hist.keys) > 0 {
		hist(metricRolloutCategory, "s", "Time a finished rollout spent in each category (model, tools, verify, agent, queue, other) along the critical path of its trace, per run (design §4.8).",
			c.split.hist, rolloutBounds)
	}
	m := sm.Metrics().AppendEmpty()
	m.SetName(metricErrors)
	m.SetUnit("{error}")
	m.SetDescription("Gym's model calls that failed, by error.type (Gym's error category, else the status code), per run and model.")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	c.errors.each(func(attrs pcommon.Map, v *int64) {
		dp := sum.DataPoints().AppendEmpty()
		attrs.CopyTo(dp.Attributes())
		dp.SetStartTimestamp(c.start)
		dp.SetTimestamp(now)
		dp.SetIntValue(*v)
	})
	return md
}

func str(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// dedup remembers the last n ids added.
type dedup struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func newDedup(n int) dedup {
	return dedup{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add reports whether id is new, and remembers it.
func (d *dedup) add(id string) bool {
	if _, ok := d.ids[id]; ok {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.ids, old)
	}
	d.ring[d.next] = id
	d.ids[id] = struct{}{}
	d.next = (d.next + 1) % len(d.ring)
	return true
}
