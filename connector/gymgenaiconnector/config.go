// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"errors"
	"fmt"
	"time"
)

// Config is the configuration of the gymgenai connector (design §4.7).
type Config struct {
	// MetricsFlushInterval is how often the metrics (cumulative since the
	// connector started) are sent on; they are sent at shutdown too.
	// Default: 15s.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`

	// RunAttribute is the resource attribute that names a span's run, put on
	// every point as nemo.run.id. Default: "nemo.run.id".
	RunAttribute string `mapstructure:"run_attribute"`

	// MaxSeries bounds the series of each metric; the points of series past
	// it go to one series per metric with otel.metric.overflow = true.
	// Default: 10000.
	MaxSeries int `mapstructure:"max_series"`

	// DedupWindow is how many model-call ids (nemo.gym.model_call.id) are
	// remembered so that a call is counted once, though the gymcapture
	// processor puts its line on each of its spans (the agent's CLIENT, the
	// model server's SERVER and gym.model.*) and a replay may send a span
	// twice. Default: 65536.
	DedupWindow int `mapstructure:"dedup_window"`

	// TimeSplit configures nemo.gym.rollout.category.duration, where each
	// finished rollout's time went (design §4.8).
	TimeSplit TimeSplitConfig `mapstructure:"time_split"`
}

// TimeSplitConfig configures the rollout time-split histograms.
type TimeSplitConfig struct {
	// Enabled records nemo.gym.rollout.category.duration. Default: true.
	Enabled bool `mapstructure:"enabled"`
	// MaxSpans bounds the spans of rollouts in flight whose facts (40 bytes
	// each) are held until their roots arrive; past it the rollouts least
	// recently added to are let go and not recorded. Default: 1048576.
	MaxSpans int `mapstructure:"max_spans"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.MetricsFlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("metrics_flush_interval must be positive, got %v", c.MetricsFlushInterval))
	}
	if c.RunAttribute == "" {
		errs = append(errs, errors.New("run_attribute must not be empty"))
	}
	if c.MaxSeries <= 0 {
		errs = append(errs, fmt.Errorf("max_series must be positive, got %d", c.MaxSeries))
	}
	if c.DedupWindow <= 0 {
		errs = append(errs, fmt.Errorf("dedup_window must be positive, got %d", c.DedupWindow))
	}
	if c.TimeSplit.Enabled && c.TimeSplit.MaxSpans < 1 {
		errs = append(errs, fmt.Errorf("time_split.max_spans must be at least 1, got %d", c.TimeSplit.MaxSpans))
	}
	return errors.Join(errs...)
}
