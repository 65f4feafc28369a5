// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseOptions(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("NEMO_GYM_OTEL_RUN_ID", "from-env")
	var stderr bytes.Buffer
	o, code := parseOptions([]string{"--", "gym", "env", "start", "--telemetry", "x"}, &stderr)
	assert.Equal(t, -1, code, stderr.String())
	assert.Equal(t, []string{"gym", "env", "start", "--telemetry", "x"}, o.command, "flags after the command are the command's")
	assert.Equal(t, DefaultEndpoint, o.endpoint)
	assert.Equal(t, "auto", o.telemetry)
	assert.Equal(t, defaultServiceName, o.serviceName)
	assert.Equal(t, "from-env", o.runID)

	o, code = parseOptions([]string{"--endpoint", "https://collector:4318", "--telemetry", "generic", "--run-id", "r1", "gym", "eval", "run"}, &stderr)
	assert.Equal(t, -1, code, stderr.String())
	assert.Equal(t, []string{"gym", "eval", "run"}, o.command, "without --, the command starts at the first argument that is no flag")
	assert.Equal(t, "r1", o.runID)

	_, code = parseOptions([]string{"--export"}, &stderr)
	assert.Equal(t, -1, code, stderr.String())

	for _, bad := range [][]string{
		{},
		{"--endpoint", "127.0.0.1:4317", "--", "gym"},
		{"--endpoint", "grpc://127.0.0.1:4317", "--", "gym"},
		{"--telemetry", "lens", "--", "gym"},
		{"--service-name", "", "--", "gym"},
		{"--export", "--", "gym"},
		{"--python-dir", "/tmp/x", "--", "gym"},
		{"--no-such-flag", "--", "gym"},
	} {
		stderr.Reset()
		_, code = parseOptions(bad, &stderr)
		assert.Equal(t, 2, code, "%q", bad)
		assert.Contains(t, stderr.String(), "otelcol-gym instrument", "%q is told what is wrong", bad)
	}
	stderr.Reset()
	_, code = parseOptions([]string{"--help"}, &stderr)
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr.String(), "++observability_enabled=true ++model_call_capture_dir=")
}
