// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func freeEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestExtensionServesTheViewer: started, the extension serves the viewer's
// pages and API over its capture dir; shut down, it listens no more.
func TestExtensionServesTheViewer(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollouts.jsonl"),
		[]byte(`{"rollout_id":"12-3","run_id":"r1","status":"OK","error_count":0,"start_time":"2026-08-21T12:00:00.000000Z","end_time":"2026-08-21T12:00:01.000000Z"}`+"\n"), 0o600))
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ServerConfig.NetAddr.Endpoint = freeEndpoint(t)
	cfg.CaptureDir = dir
	require.NoError(t, cfg.Validate())
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))

	base := "http://" + cfg.ServerConfig.NetAddr.Endpoint
	for path, want := range map[string]string{
		"/":                    "<title>otelcol-gym",
		"/api/runs":            `"run":"r1"`,
		"/api/rollouts?run=r1": `"id":"12-3"`,
	} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, string(body), want, path)
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
	}
	require.NoError(t, ext.Shutdown(context.Background()))
	_, err = http.Get(base + "/")
	assert.Error(t, err, "still listening after Shutdown")
}

func TestExtensionPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ServerConfig.NetAddr.Endpoint = l.Addr().String()
	cfg.CaptureDir = t.TempDir()
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	err = ext.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, l.Addr().String())
	require.NoError(t, ext.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	f := NewFactory()
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), f.CreateDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Shutdown(context.Background()))
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "gymview", f.Type().String())
	cfg := f.CreateDefaultConfig().(*Config)
	assert.Equal(t, "127.0.0.1:13180", cfg.ServerConfig.NetAddr.Endpoint)
	assert.Error(t, cfg.Validate(), "capture_dir is required")
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
}

// TestExtensionLogsWhereToLook: the start line gives the URL to open and the
// capture dir as an absolute path, whatever the configuration's relative one.
func TestExtensionLogsWhereToLook(t *testing.T) {
	t.Chdir(t.TempDir())
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ServerConfig.NetAddr.Endpoint = freeEndpoint(t)
	cfg.CaptureDir = "./captures"
	set := extensiontest.NewNopSettings(f.Type())
	core, logs := observer.New(zapcore.InfoLevel)
	set.Logger = zap.New(core)
	ext, err := f.Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()

	url := "http://" + cfg.ServerConfig.NetAddr.Endpoint + "/"
	lines := logs.FilterMessage("Serving the rollout viewer at " + url).All()
	require.Len(t, lines, 1, "%v", logs.All())
	fields := lines[0].ContextMap()
	assert.Equal(t, url, fields["url"])
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "captures"), fields["capture_dir"])
}
