// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

var componentType = component.MustNewType("gymgenai")

// NewFactory returns the factory of the gymgenai connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		componentType,
		createDefaultConfig,
		connector.WithTracesToMetrics(createTracesToMetrics, component.StabilityLevelAlpha),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		MetricsFlushInterval: 15 * time.Second,
		RunAttribute:         gymconv.RunAttribute,
		MaxSeries:            10_000,
		DedupWindow:          65_536,
	}
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newGenAIConnector(set, cfg.(*Config), next, realTicker), nil
}
