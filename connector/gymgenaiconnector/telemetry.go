// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/timesplit"
)

// telemetry records the connector's own metrics, declared in metadata.yaml
// and built by mdatagen.
type telemetry struct {
	*metadata.TelemetryBuilder
	outcomes [timesplit.Outcomes]metric.MeasurementOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("gymgenai connector metrics: %w", err)
	}
	t := &telemetry{TelemetryBuilder: b}
	for o, name := range timesplit.OutcomeNames() {
		t.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", name)))
	}
	return t, nil
}

// counts is what one batch did, recorded without the lock.
type counts struct {
	calls, duplicates, overflowed int64
	late                          int64                     // spans after their rollout's root
	splits                        [timesplit.Outcomes]int64 // rollout roots by outcome
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	for _, m := range [...]struct {
		add func(int64)
		v   int64
	}{
		{func(v int64) { t.ConnectorGymgenaiModelCalls.Add(ctx, v) }, c.calls},
		{func(v int64) { t.ConnectorGymgenaiDuplicateSpans.Add(ctx, v) }, c.duplicates},
		{func(v int64) { t.ConnectorGymgenaiOverflowCalls.Add(ctx, v) }, c.overflowed},
		{func(v int64) { t.ConnectorGymgenaiTimeSplitLateSpans.Add(ctx, v) }, c.late},
	} {
		if m.v != 0 {
			m.add(m.v)
		}
	}
	for o, v := range c.splits {
		if v != 0 {
			t.ConnectorGymgenaiTimeSplitRollouts.Add(ctx, v, t.outcomes[o])
		}
	}
}
