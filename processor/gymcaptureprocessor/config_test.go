// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	load := func(id component.ID) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		sub, err := cm.Sub(id.String())
		require.NoError(t, err)
		require.NoError(t, sub.Unmarshal(cfg))
		return cfg, cfg.Validate()
	}
	def, err := load(component.NewID(componentType))
	require.NoError(t, err)
	want := createDefaultConfig().(*Config)
	want.CaptureDir = "/captures"
	assert.Equal(t, want, def)

	custom, err := load(component.NewIDWithName(componentType, "custom"))
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, custom.CaptureWait)
	assert.Equal(t, 8, custom.MaxRollouts)
	assert.Equal(t, 4, custom.MaxOpenFiles)
	assert.True(t, custom.CaptureMessageContent)
	assert.Equal(t, 4096, custom.MaxMessageBytes)
	assert.False(t, def.CaptureMessageContent, "content is opt-in")

	_, err = load(component.NewIDWithName(componentType, "missing_dir"))
	assert.ErrorContains(t, err, "capture_dir is required")
	_, err = load(component.NewIDWithName(componentType, "bad"))
	assert.ErrorContains(t, err, "capture_wait must not be negative")
	assert.ErrorContains(t, err, "max_line_bytes must be positive")
	assert.ErrorContains(t, err, "max_open_files must be positive")
	_, err = load(component.NewIDWithName(componentType, "small_messages"))
	assert.ErrorContains(t, err, "max_message_bytes must be at least 1024 (a message with its truncation marker), got 100")
}
