// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package config holds the example collector configurations of otelcol-gym
// (design §6) and embeds the standalone one, which is the binary's default.
package config // import "github.com/otelcol-gym/otelcol-gym/config"

import (
	_ "embed"
	"os"
	"strings"
)

// Standalone is config/standalone.yaml, the configuration otelcol-gym runs
// when it is started without --config.
//
//go:embed standalone.yaml
var Standalone string

// WithStandaloneDefault returns args with `--config=yaml:<Standalone>`
// appended when they start the collector without any --config, and the
// forwarding overlay after it when OTELCOL_GYM_EXPORTER_OTLP_ENDPOINT is set
// (forward.go). `validate` without --config gets them too: it checks what
// `otelcol-gym` alone would run, forwarding variables included. The other
// sub-commands (components, help, completion) and --help/--version are left
// alone, so they behave as in any collector; --set and --feature-gates still
// apply on top of the default. The error says what
// is wrong with the forwarding variables.
func WithStandaloneDefault(args []string) ([]string, error) {
	out := withDefault(args, Standalone)
	if len(out) == len(args) {
		return out, nil
	}
	return withForwarding(out, Standalone, os.LookupEnv, os.Setenv)
}

func withDefault(args []string, standalone string) []string {
	if len(args) == 0 {
		return args
	}
	for _, a := range args[1:] {
		switch {
		case a == "--config" || a == "-c" || strings.HasPrefix(a, "--config="):
			return args
		case a == "-h" || a == "--help" || a == "-v" || a == "--version":
			return args
		case a == "components" || a == "help" || a == "completion":
			return args
		}
	}
	out := make([]string, 0, len(args)+1)
	out = append(out, args...)
	return append(out, "--config=yaml:"+standalone)
}
