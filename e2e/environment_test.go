// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
