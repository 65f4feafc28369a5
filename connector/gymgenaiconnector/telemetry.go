// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector/internal/metadata"
)

// telemetry records the connector's own metrics, declared in metadata.yaml
// and built by mdatagen.
type telemetry struct {
	*metadata.TelemetryBuilder
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("gymgenai connector metrics: %w", err)
	}
	return &telemetry{TelemetryBuilder: b}, nil
}

// counts is what one batch did, recorded without the lock.
type counts struct {
	calls, duplicates, overflowed int64
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	for _, m := range [...]struct {
		add func(int64)
		v   int64
	}{
		{func(v int64) { t.ConnectorGymgenaiModelCalls.Add(ctx, v) }, c.calls},
		{func(v int64) { t.ConnectorGymgenaiDuplicateSpans.Add(ctx, v) }, c.duplicates},
		{func(v int64) { t.ConnectorGymgenaiOverflowCalls.Add(ctx, v) }, c.overflowed},
	} {
		if m.v != 0 {
			m.add(m.v)
		}
	}
}
