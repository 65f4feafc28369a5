// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"

	"github.com/otelcol-gym/otelcol-gym/internal/confcheck/confchecktest"
)

// unmarshalYAML decodes text as the collector would a file's gymspans
// section: YAML through confmap, then the Config's Unmarshal.
func unmarshalYAML(t *testing.T, text string) (*Config, error) {
	t.Helper()
	return unmarshalConf(confchecktest.FromYAML(t, text))
}

func unmarshalConf(conf *confmap.Conf) (*Config, error) {
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = "/tmp/unused"
	return cfg, conf.Unmarshal(cfg)
}

func TestUnmarshalPermissions(t *testing.T) {
	for _, tc := range []struct {
		yaml, file, dir string
	}{
		{"file_permissions: 0640", "0640", "0750"},
		{"file_permissions: 0600\ndirectory_permissions: 0700", "0600", "0700"},
		{"file_permissions: 0o644", "0644", "0750"},
		{`file_permissions: "0640"`, "0640", "0750"},
		{"file_permissions: '600'", "600", "0750"}, // quoted digits are octal, as before
		{"directory_permissions: 0", "0640", "00"},
		{"{}", "0640", "0750"},
	} {
		cfg, err := unmarshalYAML(t, tc.yaml)
		require.NoError(t, err, tc.yaml)
		assert.Equal(t, tc.file, cfg.FilePermissions, tc.yaml)
		assert.Equal(t, tc.dir, cfg.DirectoryPermissions, tc.yaml)
		require.NoError(t, cfg.Validate(), tc.yaml)
	}
	mode, err := parsePerm(mustUnmarshal(t, "file_permissions: 0640").FilePermissions)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), mode, "unquoted 0640 is mode 0640")

	for text, want := range map[string]string{
		"file_permissions: 640":       `file_permissions: 640 is not an octal permission (YAML reads an unquoted number as decimal unless it starts with 0 and has only octal digits); write it quoted, e.g. "0640"`,
		"directory_permissions: 0999": `directory_permissions: 999 is not an octal permission`,
		"file_permissions: -1":        `file_permissions: -1 is not an octal permission`,
	} {
		_, err := unmarshalYAML(t, text)
		assert.ErrorContains(t, err, want, text)
	}
}

// TestUnmarshalPermissionsFromEnvironment: a value from ${env:...} is the
// variable's text, decoded as a string as before (640 is octal there).
func TestUnmarshalPermissionsFromEnvironment(t *testing.T) {
	t.Setenv("GYMSPANS_TEST_PERM", "640")
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"yaml:file_permissions: ${env:GYMSPANS_TEST_PERM}"},
		ProviderFactories: []confmap.ProviderFactory{yamlprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	require.NoError(t, err)
	conf, err := r.Resolve(context.Background())
	require.NoError(t, err)
	cfg, err := unmarshalConf(conf)
	require.NoError(t, err)
	assert.Equal(t, "640", cfg.FilePermissions)
}

func TestUnmarshalDurations(t *testing.T) {
	cfg := mustUnmarshal(t, "flush_interval: 2s\nlock_hold: 0\ntimeout: 10s\nretry_on_failure: {enabled: true, initial_interval: 1s}")
	assert.Equal(t, 2*time.Second, cfg.FlushInterval)
	assert.Equal(t, time.Duration(0), cfg.LockHold)
	assert.Equal(t, 10*time.Second, cfg.TimeoutConfig.Timeout)
	assert.Equal(t, time.Second, cfg.RetryConfig.InitialInterval)

	for text, want := range map[string]string{
		"flush_interval: 1 second": `flush_interval: "1 second" is not a duration: write a number and a unit with no space, e.g. "5s"`,
		"lock_hold: 10":            `lock_hold: 10 has no unit`,
		"timeout: 5 s":             `timeout: "5 s" is not a duration`,
		"retry_on_failure: {max_elapsed_time: 5 minutes}": `retry_on_failure.max_elapsed_time: "5 minutes" is not a duration`,
	} {
		_, err := unmarshalYAML(t, text)
		assert.ErrorContains(t, err, want, text)
		assert.ErrorContains(t, err, "(units: ns, us or µs, ms, s, m, h)", text)
	}
}

func mustUnmarshal(t *testing.T, text string) *Config {
	t.Helper()
	cfg, err := unmarshalYAML(t, text)
	require.NoError(t, err, text)
	return cfg
}
