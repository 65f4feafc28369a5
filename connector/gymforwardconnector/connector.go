// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymforwardconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector"

import (
	"context"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// tracesForwarder, metricsForwarder and logsForwarder are the connector for
// each signal: the pipeline's data, unchanged, to the forwarding pipeline
// (forwarder.offer); ConsumeX always returns nil. Start, Shutdown and
// Capabilities (the data is not changed) are the forwarder's.
type tracesForwarder struct {
	*forwarder
	next consumer.Traces
}

func (c *tracesForwarder) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	c.offer(ctx, td.SpanCount(), func(ctx context.Context) error { return c.next.ConsumeTraces(ctx, td) })
	return nil
}

type metricsForwarder struct {
	*forwarder
	next consumer.Metrics
}

func (c *metricsForwarder) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	c.offer(ctx, md.DataPointCount(), func(ctx context.Context) error { return c.next.ConsumeMetrics(ctx, md) })
	return nil
}

type logsForwarder struct {
	*forwarder
	next consumer.Logs
}

func (c *logsForwarder) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.offer(ctx, ld.LogRecordCount(), func(ctx context.Context) error { return c.next.ConsumeLogs(ctx, ld) })
	return nil
}
