// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
)

// TestLoadConfig loads every key of testdata/config.yaml through confmap onto
// the factory's default, per component ID.
func TestLoadConfig(t *testing.T) {
	load := func(id component.ID) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		return cfg, gymtest.LoadConfig(t, filepath.Join("testdata", "config.yaml"), id, cfg)
	}

	def, err := load(component.NewID(componentType))
	require.NoError(t, err)
	want := createDefaultConfig().(*Config)
	want.CaptureDir = "/var/gym/captures"
	assert.Equal(t, want, def)

	custom, err := load(component.NewIDWithName(componentType, "custom"))
	require.NoError(t, err)
	require.True(t, custom.QueueConfig.HasValue(), "sending_queue")
	queue := custom.QueueConfig.Get()
	require.NotNil(t, queue.StorageID)
	assert.Equal(t, component.MustNewIDWithName("file_storage", "gym"), *queue.StorageID)
	assert.Equal(t, int64(500), queue.QueueSize)
	want = createDefaultConfig().(*Config)
	want.CaptureDir = "/var/gym/captures"
	want.PathTemplate = "{run_id}.{rollout_id}.spans.jsonl"
	want.CombinedFile = "all.jsonl"
	want.Rotation = RotationConfig{MaxMegabytes: 50, MaxBackups: 3}
	want.RolloutsFile = "roots.jsonl"
	want.RolloutRoots = rootsMarked
	want.RolloutAttribute = "app.rollout"
	want.RunAttribute = "app.run"
	want.ServiceAttributes = []string{"app.service", "service.name"}
	want.Format = formatOTLPJSON
	want.MaxOpenFiles = 64
	want.FlushInterval = 250 * time.Millisecond
	want.LockHold = 0
	want.FilePermissions = "0600"
	want.DirectoryPermissions = "0700"
	want.ServiceMap = ServiceMapConfig{Enabled: false, JSONFile: "map.json", MarkdownFile: "map.md"}
	want.TimeoutConfig.Timeout = 10 * time.Second
	want.QueueConfig = custom.QueueConfig // checked above
	want.RetryConfig.Enabled = true
	want.RetryConfig.InitialInterval = 2 * time.Second
	want.RetryConfig.MaxInterval = 20 * time.Second
	want.RetryConfig.MaxElapsedTime = 2 * time.Minute
	assert.Equal(t, want, custom)

	_, err = load(component.NewIDWithName(componentType, "invalid"))
	assert.ErrorContains(t, err, "rollout_roots")
	assert.ErrorContains(t, err, "service_attributes")
}

// TestValidateNamesEveryKey: each bad value is refused with its key's name.
func TestValidateNamesEveryKey(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.PathTemplate = "spans.jsonl"
	cfg.CombinedFile = "a/b"
	cfg.RolloutsFile = ".."
	cfg.RolloutRoots = "roots"
	cfg.RolloutAttribute = " "
	cfg.RunAttribute = ""
	cfg.ServiceAttributes = []string{"service.name", ""}
	cfg.Format = "protobuf"
	cfg.MaxOpenFiles = 1
	cfg.FlushInterval = 0
	cfg.LockHold = 2 * time.Second
	cfg.Rotation = RotationConfig{MaxMegabytes: 0, MaxBackups: -1}
	cfg.FilePermissions = "rw"
	cfg.DirectoryPermissions = "0999"
	cfg.ServiceMap.JSONFile = "/etc/map.json"
	cfg.TimeoutConfig.Timeout = -time.Second
	err := cfg.Validate()
	for _, key := range []string{"capture_dir", "path_template", "combined_file", "rollouts_file", "rollout_roots",
		"rollout_attribute", "run_attribute", "service_attributes", "format", "max_open_files", "flush_interval",
		"lock_hold", "rotation.max_megabytes", "rotation.max_backups", "file_permissions", "directory_permissions",
		"service_map.json_file", "timeout"} {
		assert.ErrorContains(t, err, key+":")
	}
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}

// oldTime is set as a dir's mtime so that any file created or removed in it
// shows: the kernel sets the mtime to now.
var oldTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// assertUntouched fails when dir gained an entry or its mtime moved since
// it was set to oldTime.
func assertUntouched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(oldTime), "%s was written (mtime %v)", dir, fi.ModTime())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "%s holds files", dir)
}

// TestValidateWritesNothing: Validate has no side effect (issue #20): on an
// existing capture dir it creates and removes nothing, and a missing one
// stays missing.
func TestValidateWritesNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chtimes(dir, oldTime, oldTime))
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = dir
	require.NoError(t, cfg.Validate())
	assertUntouched(t, dir)

	missing := filepath.Join(t.TempDir(), "captures")
	cfg.CaptureDir = missing
	require.NoError(t, cfg.Validate())
	_, err := os.Stat(missing)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestStartChecksCaptureDir: what Validate no longer looks at, Start does: a
// capture_dir that is a file, or on a read-only filesystem, fails Start with
// an error naming capture_dir.
func TestStartChecksCaptureDir(t *testing.T) {
	start := func(dir string) error {
		cfg := createDefaultConfig().(*Config)
		cfg.CaptureDir = dir
		cfg.ServiceMap.Enabled = false
		require.NoError(t, cfg.Validate())
		exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
		require.NoError(t, err)
		err = exp.Start(context.Background(), componenttest.NewNopHost())
		require.NoError(t, exp.Shutdown(context.Background()))
		return err
	}
	file := filepath.Join(t.TempDir(), "captures")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	err := start(file)
	require.ErrorContains(t, err, "capture_dir")
	assert.ErrorContains(t, err, "not a directory")

	mnt := t.TempDir()
	if err := mountTmpfs(t, mnt, "1m", true); err != nil {
		t.Skipf("cannot mount a read-only tmpfs here: %v", err)
	}
	err = start(mnt)
	require.ErrorContains(t, err, "capture_dir")
	assert.ErrorContains(t, err, "cannot be written")
}
