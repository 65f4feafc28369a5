// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcredentialsprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcredentialsprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	load := func(name string) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
		require.NoError(t, err)
		require.NoError(t, sub.Unmarshal(cfg))
		return cfg, confmap.Validate(cfg)
	}
	def, err := load("")
	require.NoError(t, err)
	assert.Equal(t, createDefaultConfig(), def)

	custom, err := load("custom")
	require.NoError(t, err)
	assert.Equal(t, []string{"x-gym-key"}, custom.Keys)
	assert.Equal(t, credentials.DefaultSuffixes, custom.Suffixes)

	off, err := load("off")
	require.NoError(t, err)
	assert.True(t, off.Rule().Off())

	_, err = load("invalid")
	require.ErrorContains(t, err, "suffixes[0] is empty")
}
