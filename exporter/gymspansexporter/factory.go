// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/credentials"

	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// NewFactory returns the factory of the gymspans exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	retry.Enabled = false
	return &Config{
		PathTemplate:         "{rollout_id}.spans.jsonl",
		CombinedFile:         "spans.jsonl",
		CombinedSpans:        combinedAll,
		Rotation:             RotationConfig{MaxMegabytes: 100, MaxBackups: 10},
		RolloutsFile:         "rollouts.jsonl",
		RolloutRoots:         rootsAuto,
		RolloutAttribute:     gymconv.RolloutAttribute,
		RunAttribute:         gymconv.RunAttribute,
		ServiceAttributes:    gymconv.DefaultServiceAttributes(),
		Format:               formatConsole,
		MaxOpenFiles:         256,
		FlushInterval:        time.Second,
		LockHold:             10 * time.Millisecond,
		MaxPendingBytes:      64 << 20,
		DedupWindowSpans:     1 << 19,
		FilePermissions:      "0640",
		DirectoryPermissions: "0750",
		TimeSplit:            TimeSplitConfig{Enabled: true, MaxSpans: 1 << 20},
		Credentials:          credentials.NewDefaultConfig(),
		ServiceMap: ServiceMapConfig{
			Enabled:      true,
			JSONFile:     "service_map.json",
			MarkdownFile: "service_map.md",
		},
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		// Off, with the collector's defaults for when a user turns it on.
		QueueConfig: configoptional.Default(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig: retry,
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newSpansExporter(set, c)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
	)
}
