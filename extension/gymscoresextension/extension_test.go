// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"
)

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600))
	}
	return dst
}

// TestExtensionSendsTheViewersScores: in a collector's extensions, gymscores
// reads the viewer's capture dir and Gym's output and the backend gets
// every score once; the capture dir gains only .gymscores.
func TestExtensionSendsTheViewersScores(t *testing.T) {
	captures := copyDir(t, filepath.Join(realGym, "captures"))
	output := copyDir(t, filepath.Join(realGym, "gym-output"))
	before, err := os.ReadDir(captures)
	require.NoError(t, err)

	vf := gymviewextension.NewFactory()
	vcfg := vf.CreateDefaultConfig()
	require.NoError(t, confMap(map[string]any{"capture_dir": captures, "gym_output": output, "endpoint": "127.0.0.1:0"}).Unmarshal(vcfg))
	view, err := vf.Create(t.Context(), extensiontest.NewNopSettings(vf.Type()), vcfg)
	require.NoError(t, err)
	h := host{component.MustNewID("gymview"): view}
	require.NoError(t, view.Start(t.Context(), h))
	defer func() { require.NoError(t, view.Shutdown(context.Background())) }()

	f := newFakeBackend(t, BackendMLflow)
	f.refuse(500, 0)
	cfg := createDefaultConfig().(*Config)
	cfg.Backend, cfg.ClientConfig.Endpoint, cfg.PollInterval = BackendMLflow, f.srv.URL, 20*time.Millisecond
	cfg.BackOffConfig.InitialInterval, cfg.BackOffConfig.MaxInterval = 10*time.Millisecond, 50*time.Millisecond
	require.NoError(t, cfg.Validate())
	ext, err := NewFactory().Create(t.Context(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.Equal(t, []component.ID{component.MustNewID("gymview")}, ext.(*scoresExtension).Dependencies())
	h[component.MustNewID("gymscores")] = ext
	require.NoError(t, ext.Start(t.Context(), h))
	want := wantTaken(t, BackendMLflow, realGymScores(t))
	require.Eventually(t, func() bool { return len(f.takenCounts()) == len(want) }, time.Minute, 10*time.Millisecond)
	require.NoError(t, ext.Shutdown(context.Background()))
	assert.Equal(t, want, f.takenCounts())

	after, err := os.ReadDir(captures)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)
	assert.FileExists(t, filepath.Join(captures, ackedFile))
}

// TestExtensionNeedsTheViewer: a user who names no viewer is told how to fix it.
func TestExtensionNeedsTheViewer(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Backend, cfg.ClientConfig.Endpoint = BackendPhoenix, "http://127.0.0.1:6006"
	ext, err := NewFactory().Create(t.Context(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	err = ext.Start(t.Context(), host{})
	require.ErrorContains(t, err, "add it to service.extensions")
	err = ext.Start(t.Context(), host{component.MustNewID("gymview"): ext})
	require.ErrorContains(t, err, "not a gymview extension")
	require.NoError(t, ext.Shutdown(t.Context()))
}
