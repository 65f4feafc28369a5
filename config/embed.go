// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package config holds the example collector configurations of otelcol-gym
// (SPEC §6) and embeds the standalone one, which is the binary's default.
package config // import "github.com/otelcol-gym/otelcol-gym/config"

import _ "embed"

// Standalone is config/standalone.yaml, the configuration otelcol-gym runs
// when it is started without --config.
//
//go:embed standalone.yaml
var Standalone string
