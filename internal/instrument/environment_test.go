// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSettings() settings {
	return settings{
		endpoint: "http://127.0.0.1:4318", telemetry: "auto", serviceName: "nemo-gym",
		pythonDir: "/tmp/otelcol-gym-instrument-1/python", announced: telemetryBridge,
	}
}

func TestEnviron(t *testing.T) {
	base := []string{
		"HOME=/home/u", "PYTHONPATH=/mine", "OTEL_EXPORTER_OTLP_ENDPOINT=http://elsewhere:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://elsewhere:4318/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		cleanupEnv + "=/tmp/x", "NEMO_GYM_OTEL_SPAN_GROUPS=all",
	}
	got := testSettings().environ(base)
	sort.Strings(got)
	assert.Equal(t, []string{
		"HOME=/home/u",
		"NEMO_GYM_OTEL_SPAN_GROUPS=all", // Gym's own settings stay the user's
		"OTELCOL_GYM_ANNOUNCED=bridge",
		"OTELCOL_GYM_TELEMETRY=auto",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_PROPAGATORS=tracecontext,baggage",
		"OTEL_SERVICE_NAME=nemo-gym",
		"PYTHONPATH=/tmp/otelcol-gym-instrument-1/python:/mine",
	}, got)

	s := testSettings()
	s.runID = "run7"
	got = s.environ([]string{"NEMO_GYM_OTEL_RUN_ID=old"})
	assert.Contains(t, got, "NEMO_GYM_OTEL_RUN_ID=run7")
	assert.NotContains(t, got, "NEMO_GYM_OTEL_RUN_ID=old")
	assert.Contains(t, got, "PYTHONPATH=/tmp/otelcol-gym-instrument-1/python", "no empty PYTHONPATH entry (the working directory)")
}

// TestExportsInAShell evaluates the export lines in sh and reads back what
// the shell then has: the same settings as environ, whatever the values hold.
func TestExportsInAShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	s := testSettings()
	s.serviceName = `it's "odd" $HOME ;x`
	s.runID = "r-1"
	script := s.exports() + "env\n"
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"PYTHONPATH=/mine", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc", "HOME=/h"}
	out, err := cmd.Output()
	require.NoError(t, err, script)
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := s.environ(cmd.Env)
	var inShell []string
	for _, kv := range got {
		if !strings.HasPrefix(kv, "PWD=") && !strings.HasPrefix(kv, "SHLVL=") && !strings.HasPrefix(kv, "_=") {
			inShell = append(inShell, kv)
		}
	}
	assert.ElementsMatch(t, want, inShell, script)
}
