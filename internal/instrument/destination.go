// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument // import "github.com/otelcol-gym/otelcol-gym/internal/instrument"

import (
	"fmt"
	"strings"
)

// gymExporterEnv picks the exporter of Gym's own telemetry; "console" prints
// the spans on each server's output instead of sending them.
const gymExporterEnv = "NEMO_GYM_OTEL_EXPORTER"

// destination says where the spans of Gym's processes go, for the line
// instrument prints: the endpoint, or, when Gym's own telemetry prints to
// its console, that, and how to get them to the collector afterwards.
func destination(telemetry string, env []string, endpoint string) string {
	own := telemetry == telemetryGym || telemetry == telemetryBridge
	if own && strings.EqualFold(lookup(env, gymExporterEnv), "console") {
		return fmt.Sprintf("spans printed on Gym's console (%s=console), none sent to %s: "+
			"`otelcol-gym replay --capture-dir DIR <gym env start's output>` reads them", gymExporterEnv, endpoint)
	}
	return "OTLP/HTTP to " + endpoint
}
