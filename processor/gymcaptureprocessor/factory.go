// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor/internal/metadata"
)

// NewFactory returns the factory of the gymcapture processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		CaptureWait:        time.Second,
		PollInterval:       100 * time.Millisecond,
		RolloutAttribute:   gymconv.RolloutAttribute,
		ServiceAttributes:  gymconv.DefaultServiceAttributes(),
		MaxRollouts:        4096,
		MaxOpenFiles:       1024,
		MaxLinesPerRollout: 1024,
		MaxLineBytes:       16 << 20,
		MaxWaitingSpans:    100_000,
		MaxMessageBytes:    32 << 10,
	}
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return newCaptureProcessor(set, cfg.(*Config), next, timesource.Real{})
}
