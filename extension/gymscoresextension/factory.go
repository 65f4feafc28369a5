// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
)

// NewFactory returns the factory of the gymscores extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	client.Timeout = 10 * time.Second
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval = time.Second
	return &Config{
		ClientConfig:  client,
		View:          component.MustNewID("gymview"),
		PollInterval:  2 * time.Second,
		QueueSize:     10000,
		BackOffConfig: retry,
	}
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newScoresExtension(cfg.(*Config), set), nil
}
