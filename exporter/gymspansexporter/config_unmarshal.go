// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-gym/otelcol-gym/internal/confcheck"
)

var _ confmap.Unmarshaler = (*Config)(nil)

// durationKeys are the Config's duration keys, as confmap names them.
var durationKeys = []string{
	"flush_interval", "lock_hold", "timeout",
	"retry_on_failure::initial_interval", "retry_on_failure::max_interval", "retry_on_failure::max_elapsed_time",
}

// Unmarshal reads what YAML makes of two common ways of writing these keys
// before decoding as usual:
//   - durations: `flush_interval: 1 second` or a bare number is refused with
//     the key and how to write one (the decoder would say "unknown unit", or
//     take a number as nanoseconds);
//   - permissions: an unquoted `file_permissions: 0640` is, to the
//     collector's YAML, the octal integer 0o640 (416), which a string key
//     refuses with a type error. That integer is the mode the user wrote, so
//     it is taken as such. An integer above 0o777 can only come from digits
//     written without the leading 0 (`640` is decimal to YAML), and is
//     refused with a message to quote them. One mistake cannot be seen:
//     digits without the 0 that come to at most 511 (`444`, decimal) arrive as
//     the same integer as octal digits would (0o674), and are taken as that
//     mode; the README says to write permissions quoted.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if err := confcheck.Durations(conf, durationKeys...); err != nil {
		return err
	}
	var errs []error
	for _, p := range []struct {
		key   string
		probe any
	}{
		{"file_permissions", &struct {
			V string `mapstructure:"file_permissions"`
		}{}},
		{"directory_permissions", &struct {
			V string `mapstructure:"directory_permissions"`
		}{}},
	} {
		if err := octalInteger(conf, p.key, p.probe); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return conf.Unmarshal(cfg)
}

// octalInteger rewrites key to its octal string when YAML gave an integer
// that a string field refuses. probe is a struct with key as its one string
// field: a value the decoder already reads as a string (quoted, or an
// environment variable's text) is left alone.
func octalInteger(conf *confmap.Conf, key string, probe any) error {
	var n int64
	switch v := conf.Get(key).(type) {
	case int:
		n = int64(v)
	case int64:
		n = v
	case uint64:
		n = int64(min(v, 0o1000))
	case float64: // YAML reads 0999 (not octal) as a float
		n = -1
	default:
		return nil
	}
	if conf.Unmarshal(probe, confmap.WithIgnoreUnused()) == nil {
		return nil
	}
	if n < 0 || n > 0o777 {
		return fmt.Errorf("%s: %v is not an octal permission (YAML reads an unquoted number as decimal unless it "+
			`starts with 0 and has only octal digits); write it quoted, e.g. "0640"`, key, conf.Get(key))
	}
	return conf.Merge(confmap.NewFromStringMap(map[string]any{key: fmt.Sprintf("0%o", n)}))
}
