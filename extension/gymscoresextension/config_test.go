// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
)

func confMap(m map[string]any) *confmap.Conf { return confmap.NewFromStringMap(m) }

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		id      component.ID
		check   func(*Config)
		wantErr string
	}{
		{component.NewIDWithName(metadata.Type, "mlflow"), func(c *Config) {
			assert.Equal(t, BackendMLflow, c.Backend)
			assert.Equal(t, "http://127.0.0.1:5000", c.ClientConfig.Endpoint)
			assert.Equal(t, component.MustNewID("gymview"), c.View)
			assert.Equal(t, 2*time.Second, c.PollInterval)
			assert.Equal(t, 10000, c.QueueSize)
			assert.Equal(t, time.Second, c.BackOffConfig.InitialInterval)
		}, ""},
		{component.NewIDWithName(metadata.Type, "phoenix"), func(c *Config) {
			assert.Equal(t, BackendPhoenix, c.Backend)
			assert.Equal(t, component.MustNewIDWithName("gymview", "other"), c.View)
			assert.Equal(t, 100, c.QueueSize)
			v, ok := c.ClientConfig.Headers.Get("Authorization")
			assert.True(t, ok)
			assert.Equal(t, "Bearer key", string(v))
		}, ""},
		{component.NewIDWithName(metadata.Type, "bad"), nil, "backend must be one of"},
		{component.NewIDWithName(metadata.Type, "secret_url"), nil, "its text is not shown"},
	} {
		t.Run(tc.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tc.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = cfg.(*Config).Validate()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.NotContains(t, err.Error(), "hunter2")
				return
			}
			require.NoError(t, err)
			tc.check(cfg.(*Config))
		})
	}
}
