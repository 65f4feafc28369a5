// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		check        func(t *testing.T, c *Config)
		wantErr      string
		unmarshalErr string
	}{
		{name: "", check: func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:13180", c.ServerConfig.NetAddr.Endpoint, "the default endpoint, loopback")
			assert.Equal(t, "/var/lib/gym/captures", c.CaptureDir)
			assert.Empty(t, c.JaegerURL)
			assert.Empty(t, c.GymOutput)
			assert.Equal(t, 5*time.Minute, c.StalledAfter, "the default threshold")
			assert.Equal(t, 250_000, c.MaxRollouts, "the default bound of the viewer's rows")
		}},
		{name: "all", check: func(t *testing.T, c *Config) {
			assert.Equal(t, "127.0.0.1:23180", c.ServerConfig.NetAddr.Endpoint)
			assert.Equal(t, "http://jaeger.example:16686", c.JaegerURL)
			assert.Equal(t, "/var/lib/gym/results", c.GymOutput)
			assert.Equal(t, "run-7", c.GymRun)
			assert.Equal(t, 5*time.Second, c.ServerConfig.ReadHeaderTimeout, "confighttp's keys are the extension's")
			assert.Equal(t, 90*time.Second, c.StalledAfter)
			assert.Equal(t, 1_000_000, c.MaxRollouts)
		}},
		{name: "stall_off", check: func(t *testing.T, c *Config) { assert.Zero(t, c.StalledAfter) }},
		{name: "negative_stall", wantErr: "stalled_after must not be negative"},
		{name: "no_rows", wantErr: "max_rollouts must be at least 1, got 0"},
		{name: "no_dir", wantErr: "capture_dir must not be empty"},
		{name: "bad_jaeger", wantErr: "jaeger_url"},
		{name: "gym_run_alone", wantErr: "set gym_output too"},
		{name: "no_endpoint", wantErr: "endpoint must not be empty"},
		{name: "unknown_key", unmarshalErr: "invalid keys: jaeger_ulr, rotation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tc.name).String())
			require.NoError(t, err)
			if tc.unmarshalErr != "" {
				require.ErrorContains(t, sub.Unmarshal(cfg), tc.unmarshalErr)
				return
			}
			require.NoError(t, sub.Unmarshal(cfg))
			err = cfg.(*Config).Validate()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, cfg.(*Config))
		})
	}
}
