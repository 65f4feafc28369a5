// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor/internal/metadata"
)

// Metric names, as metadata.yaml declares them (documentation.md lists
// them); the tests read them.
const (
	metricSpansJoined      = "otelcol_processor_gymcapture_spans_joined"
	metricSpansMissed      = "otelcol_processor_gymcapture_spans_missed"
	metricCaptureLines     = "otelcol_processor_gymcapture_capture_lines"
	metricCaptureErrors    = "otelcol_processor_gymcapture_capture_errors"
	metricDownstreamFailed = "otelcol_processor_gymcapture_downstream_failed_spans"
)

// Attribute names of metadata.yaml.
const (
	metricAttrHow    = "how"
	metricAttrReason = "reason"
	metricAttrResult = "result"
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

// telemetry records the processor's metrics, declared in metadata.yaml and
// built by mdatagen.
type telemetry struct {
	*metadata.TelemetryBuilder

	// Attribute options built once, so recording allocates nothing.
	byID, byTime []metric.AddOption
	missedOpt    [numMissed][]metric.AddOption
	lineOpt      [numLineResults][]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("gymcapture processor metrics: %w", err)
	}
	t := &telemetry{TelemetryBuilder: b}
	opt := func(k, v string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))}
	}
	t.byID, t.byTime = opt(metricAttrHow, modelcall.ByResponseID), opt(metricAttrHow, modelcall.ByTime)
	for i, s := range missedNames {
		t.missedOpt[i] = opt(metricAttrReason, s)
	}
	for i, s := range lineNames {
		t.lineOpt[i] = opt(metricAttrResult, s)
	}
	return t, nil
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	add := func(m metric.Int64Counter, v int64, opts []metric.AddOption) {
		if v != 0 {
			m.Add(ctx, v, opts...)
		}
	}
	add(t.ProcessorGymcaptureSpansJoined, c.joinedByID, t.byID)
	add(t.ProcessorGymcaptureSpansJoined, c.joinedByTime, t.byTime)
	for i, v := range c.missed {
		add(t.ProcessorGymcaptureSpansMissed, v, t.missedOpt[i])
	}
	for i, v := range c.lines {
		add(t.ProcessorGymcaptureCaptureLines, v, t.lineOpt[i])
	}
	add(t.ProcessorGymcaptureCaptureErrors, c.captureErrors, nil)
	t.ProcessorGymcaptureWaitingSpans.Record(ctx, c.waiting)
}
