// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configretry"
)

// The backends scores are sent to.
const (
	BackendPhoenix = "phoenix"
	BackendMLflow  = "mlflow"
)

var backends = []string{BackendPhoenix, BackendMLflow}

// Config is the configuration of the gymscores extension (design §6).
type Config struct {
	// ClientConfig is the backend's HTTP client: endpoint is its base URL
	// (Phoenix's http://127.0.0.1:6006, MLflow's http://127.0.0.1:5000),
	// headers what it wants with every request (Phoenix's Authorization),
	// never logged. Required: endpoint. Default timeout: 10s.
	ClientConfig confighttp.ClientConfig `mapstructure:",squash"`

	// Backend is the kind of backend: phoenix (session and trace
	// annotations) or mlflow (assessments). Required.
	Backend string `mapstructure:"backend"`

	// View is the gymview extension whose capture dir and Gym's output
	// (gym_output) are read: the scores sent are the ones its pages show.
	// Default: gymview.
	View component.ID `mapstructure:"view"`

	// PollInterval is how often Gym's output and rollouts.jsonl are read for
	// new scores, and scores due are sent. Default: 2s.
	PollInterval time.Duration `mapstructure:"poll_interval"`

	// QueueSize bounds the scores waiting to be sent or retried. Scores past
	// it stay in Gym's files and are queued at a later poll. Default: 10000.
	QueueSize int `mapstructure:"queue_size"`

	// BackOffConfig retries each score with exponential backoff (1s to 30s)
	// until max_elapsed_time (default 5m), after which it is counted in
	// extension_gymscores_scores_failed and logged, and sent again only
	// after a restart. enabled: false gives up after the first failure.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration; it has no side effects.
func (c *Config) Validate() error {
	var errs []error
	if !slices.Contains(backends, c.Backend) {
		errs = append(errs, fmt.Errorf("backend must be one of %v, got %q", backends, c.Backend))
	}
	if c.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must name the backend's base URL (e.g. http://127.0.0.1:6006)"))
	} else if u, err := url.Parse(c.ClientConfig.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("endpoint must be an http:// or https:// URL with a host (its text is not shown: it may hold a secret)"))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll_interval must be positive, got %s", c.PollInterval))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("queue_size must be at least 1, got %d", c.QueueSize))
	}
	return errors.Join(errs...)
}
