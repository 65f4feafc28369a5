// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// LoadConfig reads the section id of the YAML file at path onto cfg (a
// factory's default config) through confmap, and returns what validating it
// as the collector does (every Validate in it) returns.
func LoadConfig(t testing.TB, path string, id component.ID, cfg component.Config) error {
	t.Helper()
	cm, err := confmaptest.LoadConf(path)
	require.NoError(t, err)
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	return confmap.Validate(cfg)
}
