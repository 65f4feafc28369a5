// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

const scopeName = "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

// Metric names (design §4.7). The README lists them.
const (
	metricSpansJoined      = "otelcol_processor_gymcapture_spans_joined"
	metricSpansMissed      = "otelcol_processor_gymcapture_spans_missed"
	metricCaptureLines     = "otelcol_processor_gymcapture_capture_lines"
	metricCaptureErrors    = "otelcol_processor_gymcapture_capture_errors"
	metricWaitingSpans     = "otelcol_processor_gymcapture_waiting_spans"
	metricDownstreamFailed = "otelcol_processor_gymcapture_downstream_failed_spans"
)

// Why a model-call span left without its capture line.
const (
	missedWait     = iota // capture_wait ran out
	missedBound           // max_waiting_spans
	missedShutdown        // the collector stopped
	missedRollout         // no rollout id that may name a file
	missedNoFile          // the rollout has no capture file: nothing to wait for
	numMissed
)

var missedNames = [numMissed]string{"wait", "bound", "shutdown", "no_rollout", "no_capture_file"}

// What became of a capture line read.
const (
	lineKept      = iota
	lineMalformed // not a JSON object
	lineOversized // longer than max_line_bytes
	lineOverBound // past max_lines_per_rollout
	numLineResults
)

var lineNames = [numLineResults]string{"kept", "malformed", "oversized", "over_bound"}

// counts is what one call (a batch, a tick) did, recorded without the lock.
type counts struct {
	joinedByID, joinedByTime int64
	missed                   [numMissed]int64
	lines                    [numLineResults]int64
	captureErrors            int64
	waiting                  int64
}

func (c *counts) countJoined(how string) {
	if how == modelcall.ByResponseID {
		c.joinedByID++
	} else {
		c.joinedByTime++
	}
}

type telemetry struct {
	joined, missed, lines, captureErrors, downstreamFailed metric.Int64Counter
	waiting                                                metric.Int64Gauge

	byID, byTime []metric.AddOption
	missedOpt    [numMissed][]metric.AddOption
	lineOpt      [numLineResults][]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter(scopeName)
	t := &telemetry{}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return c
	}
	t.joined = counter(metricSpansJoined, "{spans}", "Model-call spans given their capture line's attributes, by how they were joined (how = response_id, time).")
	t.missed = counter(metricSpansMissed, "{spans}", "Model-call spans that left without a capture line, by reason (wait, bound, shutdown, no_rollout, no_capture_file).")
	t.lines = counter(metricCaptureLines, "{lines}", "Capture lines read, by result (kept, malformed, oversized, over_bound).")
	t.captureErrors = counter(metricCaptureErrors, "{errors}", "Capture files that could not be read (not a regular file, a symlink, an I/O error).")
	t.downstreamFailed = counter(metricDownstreamFailed, "{spans}", "Spans released after their wait that the next consumer refused.")
	var err error
	t.waiting, err = m.Int64Gauge(metricWaitingSpans, metric.WithDescription("Model-call spans waiting for their capture line."), metric.WithUnit("{spans}"))
	errs = append(errs, err)
	opt := func(k, v string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))}
	}
	t.byID, t.byTime = opt("how", "response_id"), opt("how", "time")
	for i, s := range missedNames {
		t.missedOpt[i] = opt("reason", s)
	}
	for i, s := range lineNames {
		t.lineOpt[i] = opt("result", s)
	}
	return t, errors.Join(errs...)
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	add := func(m metric.Int64Counter, v int64, opts []metric.AddOption) {
		if v != 0 {
			m.Add(ctx, v, opts...)
		}
	}
	add(t.joined, c.joinedByID, t.byID)
	add(t.joined, c.joinedByTime, t.byTime)
	for i, v := range c.missed {
		add(t.missed, v, t.missedOpt[i])
	}
	for i, v := range c.lines {
		add(t.lines, v, t.lineOpt[i])
	}
	add(t.captureErrors, c.captureErrors, nil)
	t.waiting.Record(ctx, c.waiting)
}
