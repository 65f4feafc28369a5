// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/extension/gymviewextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// viewExtension serves the rollout viewer (internal/gymview, the handler the
// `otelcol-gym view` subcommand serves too) on its own HTTP server.
type viewExtension struct {
	cfg *Config
	set extension.Settings

	handler *gymview.Handler
	server  *http.Server
	tel     *metadata.TelemetryBuilder
	stop    chan struct{} // ends the watcher
	done    sync.WaitGroup
}

func newViewExtension(cfg *Config, set extension.Settings) *viewExtension {
	return &viewExtension{cfg: cfg, set: set}
}

func (e *viewExtension) Start(ctx context.Context, host component.Host) error {
	h, err := gymview.New(gymview.Options{
		CaptureDir:   e.cfg.CaptureDir,
		JaegerURL:    e.cfg.JaegerURL,
		LocalOnly:    gymview.IsLoopback(e.cfg.ServerConfig.NetAddr.Endpoint),
		Logger:       e.set.Logger,
		GymOutput:    e.cfg.GymOutput,
		GymRun:       e.cfg.GymRun,
		StalledAfter: e.cfg.StalledAfter,
		MaxRollouts:  e.cfg.MaxRollouts,
	})
	if err != nil {
		return err
	}
	tel, err := metadata.NewTelemetryBuilder(e.set.TelemetrySettings)
	if err != nil {
		h.Close()
		return fmt.Errorf("gymview: its metrics: %w", err)
	}
	ln, err := e.cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		tel.Shutdown()
		h.Close()
		return fmt.Errorf("gymview: listening on %s: %w", e.cfg.ServerConfig.NetAddr.Endpoint, err)
	}
	srv, err := e.cfg.ServerConfig.ToServer(ctx, host.GetExtensions(), e.set.TelemetrySettings, h)
	if err != nil {
		ln.Close()
		tel.Shutdown()
		h.Close()
		return err
	}
	e.handler, e.server, e.tel, e.stop = h, srv, tel, make(chan struct{})
	url := viewerURL(ln.Addr().String(), e.cfg.ServerConfig.TLS.HasValue())
	e.set.Logger.Info("Serving the rollout viewer at "+url,
		zap.String("url", url), zap.String("capture_dir", absDir(e.cfg.CaptureDir)))
	e.done.Add(2)
	go func() {
		defer e.done.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	// Capture-only and stalled rollouts are logged and counted whether or
	// not anyone looks at the pages.
	w := newWatcher(h, e.set.Logger, tel, e.cfg)
	go func() {
		defer e.done.Done()
		w.run(e.stop)
	}()
	return nil
}

func (e *viewExtension) Shutdown(ctx context.Context) error {
	if e.server == nil {
		return nil
	}
	close(e.stop)
	err := e.server.Shutdown(ctx)
	e.done.Wait()
	e.tel.Shutdown()
	e.handler.Close()
	return err
}

var _ extension.Extension = (*viewExtension)(nil)

// viewerURL is the address a user opens the viewer at.
func viewerURL(addr string, tls bool) string {
	if tls {
		return "https://" + addr + "/"
	}
	return "http://" + addr + "/"
}

// absDir is dir made absolute, so that a log line says where the files are
// whatever the directory the collector was started in; dir itself when it
// cannot be.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
