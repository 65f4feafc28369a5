// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
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
	assert.Equal(t, createDefaultConfig(), def)

	custom, err := load(component.NewIDWithName(componentType, "custom"))
	require.NoError(t, err)
	assert.Equal(t, "gym.rollout", custom.RolloutAttribute)
	assert.Equal(t, []string{"/generate"}, custom.ModelRoutes)
	assert.Equal(t, []string{"gym.job", "rl.train"}, custom.JobSpanNames)
	assert.Equal(t, 2*time.Second, custom.Settle)
	assert.Equal(t, time.Hour, custom.RolloutWait)
	assert.True(t, custom.PromoteToResource)
	assert.False(t, custom.Split.Enabled)
	assert.Equal(t, 100, custom.Split.MaxTrackedRoots)

	_, err = load(component.NewIDWithName(componentType, "invalid"))
	require.ErrorContains(t, err, "settle")
}

func TestValidateNamesEveryKey(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RolloutAttribute = " "
	cfg.URLPrefix = "a/b"
	cfg.RolloutIDPattern = "x*"
	cfg.ServiceAttributes = nil
	cfg.Settle = 0
	cfg.MaxPendingSpans = 0
	cfg.MaxPendingBytes = -1
	cfg.Split.MaxJobLinks = -1
	cfg.Split.MaxTrackedJobs = 0
	cfg.Split.MaxTrackedRoots = 0
	err := cfg.Validate()
	for _, key := range []string{"rollout_attribute", "url_prefix", "rollout_id_pattern", "service_attributes", "settle",
		"max_pending_spans", "max_pending_bytes", "split.max_job_links", "split.max_tracked_jobs", "split.max_tracked_roots"} {
		assert.ErrorContains(t, err, key)
	}
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}

func TestFactoryLifecycle(t *testing.T) {
	f := NewFactory()
	sink := new(consumertest.TracesSink)
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(componentType), f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	td := readTraces(t, filepath.Join(goldenDir, "per_rollout_preset", "input.json"))
	n := td.SpanCount()
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, n, sink.SpanCount())
	assert.True(t, p.Capabilities().MutatesData)
	processortest.VerifyShutdown(t, f, f.CreateDefaultConfig())
}

// TestFactoryMarksRolloutRoots: the factory says it marks rollout roots
// (what the gymspans exporter's rollout_roots: auto asks the host) once it
// created a processor, and only that factory: a factory of another
// collector in the same process that created none does not. The type the
// exporter looks the factory up by is this processor's.
func TestFactoryMarksRolloutRoots(t *testing.T) {
	assert.Equal(t, gymconv.ProcessorType, componentType.String())
	f := NewFactory()
	m, ok := f.(gymconv.RootMarker)
	require.True(t, ok, "the factory is a gymconv.RootMarker")
	assert.False(t, m.MarksRolloutRoots(), "before it created a processor")
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(componentType), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	assert.True(t, m.MarksRolloutRoots(), "after it created a processor")
	assert.False(t, NewFactory().(gymconv.RootMarker).MarksRolloutRoots(), "another factory, which created none")
}
