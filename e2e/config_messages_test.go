// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// unsetEnv removes names from this process's environment (which runCmd and
// startCollector pass on) until the test ends.
func unsetEnv(t *testing.T, names ...string) {
	for _, n := range names {
		t.Setenv(n, "") // restores the old value at the end
		require.NoError(t, os.Unsetenv(n))
	}
}

// TestValidateNamesMissingVariables: `validate` and a start on a shipped
// config whose variables are unset name each variable the file has no
// default for, instead of a component's complaint about an empty value.
func TestValidateNamesMissingVariables(t *testing.T) {
	every := []string{}
	for _, kv := range shippedEnv(t, "http://127.0.0.1:9") {
		every = append(every, strings.SplitN(kv, "=", 2)[0])
	}
	unsetEnv(t, every...)
	for file, want := range map[string][]string{
		"gateway.yaml":   {"OTELCOL_GYM_TOKEN", "OTELCOL_GYM_TLS_CERT", "OTELCOL_GYM_TLS_KEY"},
		"forwarder.yaml": {"OTELCOL_GYM_TOKEN", "OTELCOL_GYM_TLS_CA"},
		"eval-submit.yaml": {"GYM_OTEL_SERVICE_NAME", "GYM_OTEL_TOKEN", "GYM_USER", "GYM_RUN_ID", "SLURM_JOB_ID",
			"GYM_BENCHMARK", "GYM_CLUSTER", "GYM_MODEL", "GYM_OTEL_ENDPOINT", "GYM_JOB_DIR", "NEMO_GYM_CAPTURE_DIR"},
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(repoRoot(t), "config", file)
			for _, args := range [][]string{{"validate", "--config", path}, {"--config", path}} {
				out, err := runCmd(t, time.Minute, nil, collectorBinary(t), args...)
				require.Error(t, err, "%q accepted with nothing set:\n%s", args, out)
				for _, name := range want {
					require.Contains(t, out, path+" needs the environment variable "+name+" (", "%q", args)
				}
				require.NotContains(t, out, "no bearer token provided")
			}
		})
	}
}

// TestConfigErrorsSayHowToWriteIt: a duration written in words or without
// a unit, and a permission YAML read as a decimal number, are refused by
// `validate` with the key and how to write it.
func TestConfigErrorsSayHowToWriteIt(t *testing.T) {
	for _, tc := range []struct {
		name, processor, exporter, want string
	}{
		{"settle in words", "settle: 5 seconds", "", `settle: "5 seconds" is not a duration: write a number and a unit with no space, e.g. "5s"`},
		{"wait without unit", "wait: 30", "", "wait: 30 has no unit"},
		{"flush_interval in words", "", "flush_interval: 1 second", `flush_interval: "1 second" is not a duration`},
		{"decimal permission", "", "file_permissions: 640", `file_permissions: 640 is not an octal permission`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:4317
processors:
  gym:
    ` + tc.processor + `
exporters:
  gymspans:
    capture_dir: ` + filepath.Join(t.TempDir(), "c") + `
    ` + tc.exporter + `
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [gym]
      exporters: [gymspans]
`
			out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "validate", "--config", writeFile(t, t.TempDir(), "c.yaml", cfg))
			require.Error(t, err, out)
			require.Contains(t, out, tc.want)
			if strings.Contains(tc.want, "duration") || strings.Contains(tc.want, "unit") {
				require.Contains(t, out, "(units: ns, us or µs, ms, s, m, h)")
			}
		})
	}
}

// TestConfigUnquotedPermissions: `file_permissions: 0600` and
// `directory_permissions: 0700` written unquoted (octal integers to YAML)
// give the files and the created capture dir those modes.
func TestConfigUnquotedPermissions(t *testing.T) {
	p := newPorts(t)
	captureDir := filepath.Join(t.TempDir(), "new", "captures")
	cfg := p.expand(`
extensions:
  health_check:
    endpoint: 127.0.0.1:${HEALTH}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${GRPC}
processors:
  gym:
exporters:
  gymspans:
    capture_dir: ${CAPTURE_DIR}
    file_permissions: 0600
    directory_permissions: 0700
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [gym]
      exporters: [gymspans]
  telemetry:
    metrics:
      level: none
`, captureDir)
	col := startCollector(t, p, nil, "--config", writeFile(t, t.TempDir(), "perm.yaml", cfg))
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", p.GRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	req, _ := secRequest(7)
	_, err = ptraceotlp.NewGRPCClient(conn).Export(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, col.stop())
	checkModes(t, map[string]os.FileMode{
		captureDir:                               0o700,
		filepath.Join(captureDir, "spans.jsonl"): 0o600,
	})
}
