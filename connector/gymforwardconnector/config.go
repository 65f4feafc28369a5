// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymforwardconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector"

// Config is the configuration of the gymforward connector (design §6).
type Config struct {
	// Destination is where the forwarding pipeline sends what it is given
	// (its exporter's URL), as the connector's log lines name it; the
	// connector itself connects to nothing. Default: "" (the lines name the
	// connector).
	Destination string `mapstructure:"destination"`
}
