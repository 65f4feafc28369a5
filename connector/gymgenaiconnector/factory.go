// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// NewFactory returns the factory of the gymgenai connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		MetricsFlushInterval: 15 * time.Second,
		RunAttribute:         gymconv.RunAttribute,
		MaxSeries:            10_000,
		DedupWindow:          65_536,
		TimeSplit:            TimeSplitConfig{Enabled: true, MaxSpans: 1 << 20},
	}
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newGenAIConnector(set, cfg.(*Config), next, timesource.Real{})
}
