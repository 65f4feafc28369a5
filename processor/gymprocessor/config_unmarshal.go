// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-gym/otelcol-gym/internal/confcheck"
)

var _ confmap.Unmarshaler = (*Config)(nil)

// durationKeys are the Config's duration keys, as confmap names them.
var durationKeys = []string{"settle", "wait", "rollout_wait", "split::job_ttl"}

// Unmarshal checks the raw duration values first, so that `settle: 5
// seconds` or `settle: 5` is refused with the key and how to write it
// (the decoder would say "unknown unit", or take 5 as 5ns), then decodes
// as usual.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if err := confcheck.Durations(conf, durationKeys...); err != nil {
		return err
	}
	return conf.Unmarshal(cfg)
}
