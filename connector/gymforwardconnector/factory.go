// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymforwardconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector/internal/metadata"
)

// NewFactory returns the factory of the gymforward connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToTraces(createTracesToTraces, metadata.TracesToTracesStability),
		connector.WithMetricsToMetrics(createMetricsToMetrics, metadata.MetricsToMetricsStability),
		connector.WithLogsToLogs(createLogsToLogs, metadata.LogsToLogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{}
}

func createTracesToTraces(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Traces) (connector.Traces, error) {
	f, err := newForwarder(set, cfg.(*Config), signalTraces, time.Now)
	if err != nil {
		return nil, err
	}
	return &tracesForwarder{forwarder: f, next: next}, nil
}

func createMetricsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Metrics, error) {
	f, err := newForwarder(set, cfg.(*Config), signalMetrics, time.Now)
	if err != nil {
		return nil, err
	}
	return &metricsForwarder{forwarder: f, next: next}, nil
}

func createLogsToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Logs, error) {
	f, err := newForwarder(set, cfg.(*Config), signalLogs, time.Now)
	if err != nil {
		return nil, err
	}
	return &logsForwarder{forwarder: f, next: next}, nil
}
