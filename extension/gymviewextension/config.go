// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"

	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// Config is the configuration of the gymview extension (design §8).
type Config struct {
	// ServerConfig is the HTTP server the viewer listens on (endpoint, TLS,
	// auth, ...). Default endpoint: 127.0.0.1:13180.
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`

	// CaptureDir is the directory to show: the gymspans exporter's
	// capture_dir. Required. It may not exist yet when the collector starts.
	CaptureDir string `mapstructure:"capture_dir"`

	// JaegerURL, when set, makes each rollout page link to its trace in this
	// Jaeger UI (<jaeger_url>/trace/<trace id>). Default: none.
	JaegerURL string `mapstructure:"jaeger_url"`

	// GymOutput, when set, is Gym's output of the run (`gym eval run
	// --output FILE`: FILE, or its directory when FILE is rollouts.jsonl):
	// each rollout shows its reward, failure and health verdict from it.
	// It may not exist yet when the collector starts. Default: none.
	GymOutput string `mapstructure:"gym_output"`

	// GymRun is the run id Gym's output belongs to (Gym's rows carry none).
	// Default: the run of the capture dir whose first rollout started last.
	GymRun string `mapstructure:"gym_run"`
	// StalledAfter marks a rollout in flight stalled when its last sign of
	// life (the end of its latest span, its capture file's last line) is
	// older: it is listed first on its run's page, counted in
	// extension_gymview_stalled_rollouts and logged once. 0 turns it off.
	// Default: 5m.
	StalledAfter time.Duration `mapstructure:"stalled_after"`

	// MaxRollouts bounds the rollouts.jsonl rows the viewer keeps in the
	// collector's memory (about 480 bytes each): past it the oldest are no
	// longer listed, their runs still count them, and the run page says
	// so. Default: 250000 (about 115 MiB).
	MaxRollouts int `mapstructure:"max_rollouts"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration; it has no side effects.
func (c *Config) Validate() error {
	var errs []error
	if c.ServerConfig.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must not be empty"))
	}
	if c.CaptureDir == "" {
		errs = append(errs, errors.New("capture_dir must not be empty"))
	}
	if err := gymview.ValidateJaegerURL(c.JaegerURL); err != nil {
		errs = append(errs, fmt.Errorf("jaeger_url: %w", err))
	}
	if c.GymRun != "" && c.GymOutput == "" {
		errs = append(errs, errors.New("gym_run names the run of gym_output: set gym_output too"))
	}
	if c.MaxRollouts < 1 {
		errs = append(errs, fmt.Errorf("max_rollouts must be at least 1, got %d", c.MaxRollouts))
	}
	if c.StalledAfter < 0 {
		errs = append(errs, fmt.Errorf("stalled_after must not be negative (0 turns it off), got %s", c.StalledAfter))
	}
	return errors.Join(errs...)
}
