// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"golang.org/x/sys/unix"
)

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
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
		t.Skipf("cannot mount a read-only tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	err = start(mnt)
	require.ErrorContains(t, err, "capture_dir")
	assert.ErrorContains(t, err, "cannot be written")
}
