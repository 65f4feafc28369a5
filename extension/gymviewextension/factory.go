// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// NewFactory returns the factory of the gymview extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = gymview.DefaultEndpoint
	return &Config{ServerConfig: server, StalledAfter: gymview.DefaultStalledAfter, MaxRollouts: gymview.DefaultMaxRollouts}
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newViewExtension(cfg.(*Config), set), nil
}
