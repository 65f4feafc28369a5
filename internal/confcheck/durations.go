// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package confcheck reads raw configuration values before confmap decodes
// them, so that a component can refuse a value with a message that says how
// to write it instead of the decoder's own ("time: unknown unit").
package confcheck // import "github.com/otelcol-gym/otelcol-gym/internal/confcheck"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

// DurationUnits says how a duration is written, for error messages.
const DurationUnits = `a number and a unit with no space, e.g. "5s", "250ms" or "1h30m" ` +
	`(units: ns, us or µs, ms, s, m, h)`

// Durations checks the raw values of keys in conf (confmap keys, nested with
// "::") that are to be decoded into time.Duration. A string that
// time.ParseDuration refuses, and a bare number other than 0 (which the
// decoder would take as nanoseconds: `settle: 5` is 5ns), is an error naming
// the key (nested keys joined with ".") and the accepted form. Absent and
// other values are left to the decoder.
func Durations(conf *confmap.Conf, keys ...string) error {
	var errs []error
	for _, key := range keys {
		name := strings.ReplaceAll(key, confmap.KeyDelimiter, ".")
		switch v := conf.Get(key).(type) {
		case string:
			if _, err := time.ParseDuration(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration: write %s", name, v, DurationUnits))
			}
		case int, int64, uint64, float64:
			if fmt.Sprint(v) != "0" {
				errs = append(errs, fmt.Errorf("%s: %v has no unit (a bare number is read as nanoseconds): write %s", name, v, DurationUnits))
			}
		}
	}
	return errors.Join(errs...)
}
