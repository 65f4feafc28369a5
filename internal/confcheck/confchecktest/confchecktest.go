// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package confchecktest builds configuration for tests the way the
// collector reads a file, so that a test sees what YAML makes of a value
// (an unquoted 0640 is an integer, `5 seconds` a string).
package confchecktest // import "github.com/otelcol-gym/otelcol-gym/internal/confcheck/confchecktest"

import (
	"testing"

	"go.opentelemetry.io/collector/confmap"
)

// FromYAML parses text as the collector's file provider parses a file.
func FromYAML(tb testing.TB, text string) *confmap.Conf {
	tb.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	conf, err := r.AsConf()
	if err != nil {
		tb.Fatal(err)
	}
	return conf
}
