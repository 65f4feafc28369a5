// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// shippedEnv is the environment every shipped config documents, with
// throwaway values made for the test.
func shippedEnv(t *testing.T, managedEndpoint string) []string {
	t.Helper()
	pki := newTestPKI(t)
	tmp := t.TempDir()
	return []string{
		"NEMO_GYM_CAPTURE_DIR=" + filepath.Join(tmp, "captures"),
		"OTELCOL_GYM_TOKEN=e2e-token",
		"OTELCOL_GYM_TLS_CA=" + pki.CAFile,
		"OTELCOL_GYM_TLS_CERT=" + pki.CertFile,
		"OTELCOL_GYM_TLS_KEY=" + pki.KeyFile,
		"OTELCOL_GYM_QUEUE_DIR=" + filepath.Join(tmp, "queue"),
		"GYM_OTEL_TOKEN=e2e-ingest-token",
		"GYM_OTEL_ENDPOINT=" + managedEndpoint,
		"GYM_OTEL_SERVICE_NAME=gym-e2e",
		"GYM_JOB_DIR=" + filepath.Join(tmp, "job"),
		"GYM_RUN_ID=e2e-run", "GYM_USER=e2e", "GYM_BENCHMARK=e2e", "GYM_CLUSTER=local", "GYM_MODEL=tiny",
		"SLURM_JOB_ID=4242",
	}
}

// TestShippedConfigsValidate: `otelcol-gym validate --config F` accepts every
// file in config/.
func TestShippedConfigsValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "config", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	env := shippedEnv(t, "http://127.0.0.1:9")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := runCmd(t, time.Minute, env, collectorBinary(t), "validate", "--config", f)
			if err != nil {
				t.Fatalf("validate: %v\n%s", err, out)
			}
		})
	}
}

// onFreePorts rewrites a shipped config's fixed loopback ports to free ones.
func onFreePorts(t *testing.T, file string, p ports) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", file))
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(
		":4317", fmt.Sprintf(":%d", p.GRPC),
		":4318", fmt.Sprintf(":%d", p.HTTP),
		":14317", fmt.Sprintf(":%d", p.GRPC),
		":14318", fmt.Sprintf(":%d", p.HTTP),
		":13133", fmt.Sprintf(":%d", p.Health),
		":13180", fmt.Sprintf(":%d", p.View),
		"port: 8888", fmt.Sprintf("port: %d", p.Metrics),
		// gateway.yaml's ports are env references with these defaults.
		":-14317}", fmt.Sprintf(":-%d}", p.GRPC),
		":-14318}", fmt.Sprintf(":-%d}", p.HTTP),
		":-13133}", fmt.Sprintf(":-%d}", p.Health),
		":-8888}", fmt.Sprintf(":-%d}", p.Metrics),
	)
	return writeFile(t, t.TempDir(), file, r.Replace(string(b)))
}

// TestShippedConfigsRun: each deployment shape of design §6 starts, becomes
// healthy and exits cleanly on SIGTERM.
//
// otelcol (v0.161.0, Collector.Run) reports healthy before it asks for
// SIGTERM: signal.Notify comes after the service started. A SIGTERM sent
// on the first healthy answer can meet Go's default action in that window,
// so an exit by the signal itself is retried twice; a collector that never
// shuts down cleanly still fails every attempt.
func TestShippedConfigsRun(t *testing.T) {
	for _, file := range []string{"forwarder.yaml", "agent.yaml", "gateway.yaml", "jaeger.yaml"} {
		t.Run(file, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				p := newPorts(t)
				col := startCollector(t, p, shippedEnv(t, "http://127.0.0.1:9"), "--config", onFreePorts(t, file, p))
				err := col.stop()
				if err == nil {
					return
				}
				if !killedBy(err, syscall.SIGTERM) || attempt == 3 {
					t.Fatalf("exit on SIGTERM (attempt %d): %v", attempt, err)
				}
				t.Logf("attempt %d: SIGTERM arrived before the collector asked for it; starting again", attempt)
			}
		})
	}
}

// killedBy reports whether err is the exit of a process killed by sig.
func killedBy(err error, sig syscall.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// TestEvalSubmitRuns runs config/eval-submit.yaml with its ${env:...} values
// set: the traces reach Gym's managed OTLP/HTTP endpoint (with the bearer
// token), Gym's file/traces and our gymspans files.
func TestEvalSubmitRuns(t *testing.T) {
	var gotTraces, badAuth atomic.Int64
	managed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") != "Bearer e2e-ingest-token" {
			badAuth.Add(1)
		}
		if r.URL.Path == "/v1/traces" {
			gotTraces.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer managed.Close()

	p := newPorts(t)
	env := shippedEnv(t, managed.URL)
	col := startCollector(t, p, env, "--config", onFreePorts(t, "eval-submit.yaml", p))

	var ids []string
	for _, svc := range []string{"nemo-gym/simple_agent", "nemo-gym/policy_model"} {
		tp := newHTTPTracerProvider(t, p.HTTP, svc)
		ids = append(ids, sendSpans(t, tp, "3-1")...)
		if err := tp.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := col.stop(); err != nil {
		t.Fatalf("exit on SIGTERM: %v", err)
	}
	if gotTraces.Load() == 0 {
		t.Error("no traces reached otlp_http/managed")
	}
	if badAuth.Load() != 0 {
		t.Errorf("%d requests to the managed endpoint lacked the bearer token", badAuth.Load())
	}
	var jobDir, captureDir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GYM_JOB_DIR="); ok {
			jobDir = v
		}
		if v, ok := strings.CutPrefix(kv, "NEMO_GYM_CAPTURE_DIR="); ok {
			captureDir = v
		}
	}
	for _, f := range []string{filepath.Join(jobDir, "otel", "traces.jsonl"), filepath.Join(captureDir, "spans.jsonl")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, id := range ids {
			if !strings.Contains(string(b), id) {
				t.Errorf("span %s is not in %s", id, f)
			}
		}
	}

	// The seed's recipe on the gymspans files shows each process's own
	// service, the routing name kept beside it (issue #20); Gym's
	// file/traces, like the managed backend, gets the resource as Gym's
	// rendering set it.
	out, err := runCmd(t, time.Minute, nil, "bash", "-c",
		`jq -r '[.trace_id, .resource.attributes."service.name", .resource.attributes."service.name.routing", .kind, .name] | @tsv' "$1" | sort`,
		"recipe", filepath.Join(captureDir, "spans.jsonl"))
	require.NoError(t, err, out)
	services := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		require.Len(t, f, 5, "row %q", line)
		services[f[1]] = true
		assert.Equal(t, "gym-e2e", f[2], "service.name.routing of %q", line)
	}
	assert.Equal(t, map[string]bool{"nemo-gym/simple_agent": true, "nemo-gym/policy_model": true}, services)
	b, err := os.ReadFile(filepath.Join(jobDir, "otel", "traces.jsonl"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(line))
		require.NoError(t, err)
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			attrs := td.ResourceSpans().At(i).Resource().Attributes()
			v, _ := attrs.Get("service.name")
			assert.Equal(t, "gym-e2e", v.AsString(), "file/traces got the resource unchanged")
			_, routing := attrs.Get("service.name.routing")
			assert.False(t, routing, "file/traces got service.name.routing")
		}
	}
}

// TestBadConfigRefused: a bad configuration is refused both by `validate` and
// at start, with a message that names the offending key (and, for a value
// written the wrong way, says how to write it). A capture_dir that cannot be
// used is refused at start only: `validate` looks at no file (it may run on
// another machine than the collector).
func TestBadConfigRefused(t *testing.T) {
	unwritable := t.TempDir()
	if os.Geteuid() == 0 {
		// root writes through permission bits; /proc is a directory no one can create files in.
		unwritable = "/proc/self"
	} else if err := os.Chmod(unwritable, 0o500); err != nil {
		t.Fatal(err)
	}
	notADir := writeFile(t, t.TempDir(), "file", "x")

	for _, tc := range []struct {
		name, processor, exporter, wantKey string
		startOnly                          bool
	}{
		{"empty capture_dir", "", `capture_dir: ""`, "capture_dir", false},
		{"capture_dir not writable", "", "capture_dir: " + unwritable, "capture_dir", true},
		{"capture_dir is a file", "", "capture_dir: " + notADir, "capture_dir", true},
		{"zero wait", "wait: 0s", "", "wait", false},
		{"negative settle", "settle: -1s", "", "settle", false},
		{"zero rollout_wait", "rollout_wait: 0s", "", "rollout_wait", false},
		{"negative split.job_ttl", "split: {job_ttl: -5m}", "", "split.job_ttl", false},
		{"zero flush_interval", "", "flush_interval: 0s", "flush_interval", false},
		{"negative lock_hold", "", "lock_hold: -1ms", "lock_hold", false},
		{"unknown processor key", "rollout_atribute: x", "", "rollout_atribute", false}, //nolint:misspell // the misspelled key is the test
		{"unknown exporter key", "", "captur_dir: /tmp", "captur_dir", false},
		{"invalid rollout_id_pattern", `rollout_id_pattern: "[a-"`, "", "rollout_id_pattern", false},
		{"empty-matching rollout_id_pattern", `rollout_id_pattern: "x*"`, "", "rollout_id_pattern", false},
		{"unknown format", "", "format: protobuf", "format", false},
		{"unknown rollout_roots", "", "rollout_roots: guessed", "rollout_roots", false},
		{"empty exporter rollout_attribute", "", `rollout_attribute: ""`, "rollout_attribute", false},
		{"settle in words", "settle: 5 seconds", "", `settle: "5 seconds" is not a duration: write a number and a unit with no space, e.g. "5s", "250ms" or "1h30m" (units: ns, us or µs, ms, s, m, h)`, false},
		{"wait without a unit", "wait: 30", "", "wait: 30 has no unit (a bare number is read as nanoseconds)", false},
		{"flush_interval in words", "", "flush_interval: 1 second", `flush_interval: "1 second" is not a duration`, false},
		{"decimal permission", "", "file_permissions: 640", `file_permissions: 640 is not an octal permission (YAML reads an unquoted number as decimal unless it starts with 0 and has only octal digits); write it quoted, e.g. "0640"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPorts(t)
			exporter := tc.exporter
			if !strings.Contains(exporter, "capture_dir:") {
				exporter = "capture_dir: " + filepath.Join(t.TempDir(), "c") + "\n    " + exporter
			}
			cfg := p.expand(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${GRPC}
processors:
  gym:
    `+tc.processor+`
exporters:
  gymspans:
    `+exporter+`
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [gym]
      exporters: [gymspans]
  telemetry:
    metrics:
      level: none
`, "")
			f := writeFile(t, t.TempDir(), "bad.yaml", cfg)
			if tc.startOnly {
				if out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "validate", "--config", f); err != nil {
					t.Errorf("validate looked at capture_dir: %v\n%s", err, out)
				}
			}
			for _, args := range [][]string{{"validate", "--config", f}, {"--config", f}} {
				if tc.startOnly && args[0] == "validate" {
					continue
				}
				out, err := runCmd(t, time.Minute, nil, collectorBinary(t), args...)
				if err == nil {
					t.Errorf("%q accepted the config:\n%s", args, cfg)
					continue
				}
				if !strings.Contains(out, tc.wantKey) {
					t.Errorf("%q: the error does not name %q:\n%s", args, tc.wantKey, out)
				}
			}
		})
	}
}
