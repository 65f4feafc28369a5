// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// scoreSource is what the gymview extension offers: the viewer's join of
// rollouts.jsonl and Gym's output, and its capture dir.
type scoreSource interface {
	Scores() []gymview.Score
	CaptureDir() string
	GymOutput() string
}

// scoresExtension runs the sender (sender.go) beside the pipelines.
type scoresExtension struct {
	cfg *Config
	set extension.Settings

	tel    *metadata.TelemetryBuilder
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ extension.Extension             = (*scoresExtension)(nil)
	_ extensioncapabilities.Dependent = (*scoresExtension)(nil)
)

func newScoresExtension(cfg *Config, set extension.Settings) *scoresExtension {
	return &scoresExtension{cfg: cfg, set: set}
}

// Dependencies makes the collector start the viewer first.
func (e *scoresExtension) Dependencies() []component.ID { return []component.ID{e.cfg.View} }

func (e *scoresExtension) Start(ctx context.Context, host component.Host) error {
	v, ok := host.GetExtensions()[e.cfg.View]
	if !ok {
		return fmt.Errorf("gymscores: no extension %s to read Gym's output from: add it to service.extensions, with gym_output set (the embedded default has gymview)", e.cfg.View)
	}
	src, ok := v.(scoreSource)
	if !ok {
		return fmt.Errorf("gymscores: view names %s, which is not a gymview extension", e.cfg.View)
	}
	client, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("gymscores: the client of %s: %w", e.cfg.Backend, err)
	}
	b := newBackend(e.cfg.Backend, client, e.cfg.ClientConfig.Endpoint)
	done, err := loadAcked(src.CaptureDir(), backendID(e.cfg.Backend, e.cfg.ClientConfig.Endpoint))
	if err != nil {
		return fmt.Errorf("gymscores: %w", err)
	}
	tel, err := metadata.NewTelemetryBuilder(e.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("gymscores: its metrics: %w", err)
	}
	s := &sender{
		source: src.Scores, backend: b, kind: e.cfg.Backend, acked: done, queue: newQueue(e.cfg.QueueSize, e.cfg.BackOffConfig),
		log: e.set.Logger, tel: tel, now: time.Now, givenUp: map[string]bool{},
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.tel, e.cancel, e.done = tel, cancel, make(chan struct{})
	if src.GymOutput() == "" {
		e.set.Logger.Warn("No scores to send: the viewer is not told where Gym's output is. "+
			"`otelcol-gym instrument -- gym eval run --output FILE` tells it; else start the collector with --set=extensions::"+
			e.cfg.View.String()+"::gym_output=FILE (gym eval run's --output)", zap.String("backend", e.cfg.Backend))
	}
	e.set.Logger.Info("Sending Gym's scores to "+e.cfg.Backend, zap.String("backend", e.cfg.Backend), zap.String("capture_dir", src.CaptureDir()))
	go func() {
		defer close(e.done)
		s.run(runCtx, e.cfg.PollInterval)
	}()
	return nil
}

// Shutdown stops the sender; what was not acknowledged yet stays in Gym's
// files and is sent after the next start.
func (e *scoresExtension) Shutdown(context.Context) error {
	if e.cancel == nil {
		return nil
	}
	e.cancel()
	<-e.done
	e.tel.Shutdown()
	return nil
}

func newBackend(kind string, client *http.Client, endpoint string) backend {
	if kind == BackendMLflow {
		return newMLflow(client, endpoint)
	}
	return newPhoenix(client, endpoint)
}
