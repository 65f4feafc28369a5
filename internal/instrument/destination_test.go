// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Where instrument's line says the spans go: Gym's own telemetry set to
// print on its console sends nothing to the endpoint, and the line says
// so and how to get them there; generic instrumentation ignores Gym's
// exporter setting.
func TestDestination(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	console := []string{"PATH=/bin", "NEMO_GYM_OTEL_EXPORTER=otlp", "NEMO_GYM_OTEL_EXPORTER=console"}
	for _, tc := range []struct {
		telemetry string
		env       []string
		console   bool
	}{
		{telemetryGym, console, true},
		{telemetryBridge, console, true},
		{telemetryBridge, []string{"NEMO_GYM_OTEL_EXPORTER=CONSOLE"}, true},
		{telemetryGeneric, console, false},
		{telemetryBridge, []string{"NEMO_GYM_OTEL_EXPORTER=console", "NEMO_GYM_OTEL_EXPORTER=otlp"}, false},
		{telemetryBridge, nil, false},
	} {
		got := destination(tc.telemetry, tc.env, ep)
		if tc.console {
			assert.Contains(t, got, "none sent to "+ep, "%s %v", tc.telemetry, tc.env)
			assert.Contains(t, got, "otelcol-gym replay", "%s %v", tc.telemetry, tc.env)
		} else {
			assert.Equal(t, "OTLP/HTTP to "+ep, got, "%s %v", tc.telemetry, tc.env)
		}
	}
}
