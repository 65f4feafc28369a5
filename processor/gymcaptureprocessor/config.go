// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"errors"
	"fmt"
	"time"
)

// Config is the configuration of the gymcapture processor (design §4.7).
type Config struct {
	// CaptureDir is the directory Gym writes <rollout_id>.capture.jsonl into
	// (Gym's model_call_capture_dir). Required.
	CaptureDir string `mapstructure:"capture_dir"`

	// CaptureWait is the longest a model-call span waits for its capture
	// line, its batch waiting with it in the caller; it then leaves without
	// it. A span that ended more than CaptureWait before it came does not
	// wait. Keep it well under the gym processor's settle. Default: 1s.
	CaptureWait time.Duration `mapstructure:"capture_wait"`

	// PollInterval is how often the capture files of rollouts with waiting
	// spans are read for new lines. Default: 100ms.
	PollInterval time.Duration `mapstructure:"poll_interval"`

	// RolloutAttribute is the span attribute that names a span's rollout
	// (the gym processor, before this one, sets it on every span of a
	// rollout). Default: "nemo.gym.rollout.id".
	RolloutAttribute string `mapstructure:"rollout_attribute"`

	// ServiceAttributes are the resource attributes that name a span's
	// service, first present wins. Default: [service.name.override, service.name].
	ServiceAttributes []string `mapstructure:"service_attributes"`

	// MaxRollouts bounds the rollouts whose capture files are followed; the
	// least recently used with no waiting span is forgotten first (a later
	// span of it reads its file again from the start). Default: 4096.
	MaxRollouts int `mapstructure:"max_rollouts"`

	// MaxOpenFiles bounds the capture files kept open between reads; past
	// it the least recently read is closed (and opened again when read).
	// Default: 256.
	MaxOpenFiles int `mapstructure:"max_open_files"`

	// MaxLinesPerRollout bounds the capture lines kept of one rollout; the
	// lines after it are counted and not joined. Default: 1024.
	MaxLinesPerRollout int `mapstructure:"max_lines_per_rollout"`

	// MaxLineBytes bounds one capture line (they hold the request and
	// response bodies); a longer line is skipped and counted. Default: 16 MiB.
	MaxLineBytes int `mapstructure:"max_line_bytes"`

	// MaxWaitingSpans bounds the model-call spans waiting for their lines; at
	// the bound the one nearest its deadline leaves without its line.
	// Default: 100000.
	MaxWaitingSpans int `mapstructure:"max_waiting_spans"`

	// CaptureMessageContent puts the model's messages of each call's
	// capture line on the span that stands for it (gen_ai.input.messages,
	// gen_ai.output.messages, gen_ai.system_instructions), and the
	// rollout's task and final answer on its agent span and root span
	// (design §4.7). Off by default, as the GenAI conventions ask: the
	// messages hold what the model was told and said. Default: false.
	CaptureMessageContent bool `mapstructure:"capture_message_content"`

	// MaxMessageBytes bounds each content attribute (its JSON); longer
	// content is cut, each cut string ending in "…[truncated by
	// otelcol-gym]". Default: 32 KiB.
	MaxMessageBytes int `mapstructure:"max_message_bytes"`
}

// minMessageBytes is the least max_message_bytes: a message or two with
// the truncation marker.
const minMessageBytes = 1024

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.CaptureDir == "" {
		errs = append(errs, errors.New("capture_dir is required"))
	}
	if c.CaptureWait < 0 {
		errs = append(errs, fmt.Errorf("capture_wait must not be negative, got %v", c.CaptureWait))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll_interval must be positive, got %v", c.PollInterval))
	}
	if c.RolloutAttribute == "" {
		errs = append(errs, errors.New("rollout_attribute must not be empty"))
	}
	if len(c.ServiceAttributes) == 0 {
		errs = append(errs, errors.New("service_attributes must not be empty"))
	}
	for name, v := range map[string]int{
		"max_rollouts": c.MaxRollouts, "max_open_files": c.MaxOpenFiles, "max_lines_per_rollout": c.MaxLinesPerRollout,
		"max_line_bytes": c.MaxLineBytes, "max_waiting_spans": c.MaxWaitingSpans,
	} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, v))
		}
	}
	if c.MaxMessageBytes < minMessageBytes {
		errs = append(errs, fmt.Errorf("max_message_bytes must be at least %d (a message with its truncation marker), got %d", minMessageBytes, c.MaxMessageBytes))
	}
	return errors.Join(errs...)
}
