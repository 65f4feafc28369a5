// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/confcheck/confchecktest"
)

func unmarshalYAML(t *testing.T, text string) (*Config, error) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	return cfg, confchecktest.FromYAML(t, text).Unmarshal(cfg)
}

func TestUnmarshalDurations(t *testing.T) {
	cfg, err := unmarshalYAML(t, "settle: 2s\nwait: 1m\nrollout_wait: 3h\nsplit: {job_ttl: 12h}")
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.Settle)
	assert.Equal(t, time.Minute, cfg.Wait)
	assert.Equal(t, 3*time.Hour, cfg.RolloutWait)
	assert.Equal(t, 12*time.Hour, cfg.Split.JobTTL)
	assert.True(t, cfg.Split.Enabled, "keys not given keep their defaults")

	for text, want := range map[string]string{
		"settle: 5 seconds":        `settle: "5 seconds" is not a duration: write a number and a unit with no space, e.g. "5s"`,
		"wait: 30":                 `wait: 30 has no unit`,
		"rollout_wait: 2 hours":    `rollout_wait: "2 hours" is not a duration`,
		"split: {job_ttl: 1 day}":  `split.job_ttl: "1 day" is not a duration`,
		"settle: 5sec\nwait: 1min": `wait: "1min" is not a duration`,
	} {
		_, err := unmarshalYAML(t, text)
		assert.ErrorContains(t, err, want, text)
		assert.ErrorContains(t, err, "(units: ns, us or µs, ms, s, m, h)", text)
	}
}
