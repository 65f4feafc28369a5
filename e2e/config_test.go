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
	)
	return writeFile(t, t.TempDir(), file, r.Replace(string(b)))
}

// TestShippedConfigsRun: each deployment shape of SPEC §6 starts, becomes
// healthy and exits cleanly on SIGTERM.
//
// otelcol (v0.161.0, Collector.Run) reports healthy before it asks for
// SIGTERM: signal.Notify comes after the service started. A SIGTERM sent
// on the first healthy answer can meet Go's default action in that window,
// so an exit by the signal itself is retried twice; a collector that never
// shuts down cleanly still fails every attempt.
func TestShippedConfigsRun(t *testing.T) {
	for _, file := range []string{"forwarder.yaml", "gateway.yaml", "jaeger.yaml"} {
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

	tp := newHTTPTracerProvider(t, p.HTTP, "nemo-gym/simple_agent")
	ids := sendSpans(t, tp, "3-1")
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
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
}

// TestBadConfigRefused: a bad configuration is refused both by `validate` and
// at start, with a message that names the offending key.
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
	}{
		{"empty capture_dir", "", `capture_dir: ""`, "capture_dir"},
		{"capture_dir not writable", "", "capture_dir: " + unwritable, "capture_dir"},
		{"capture_dir is a file", "", "capture_dir: " + notADir, "capture_dir"},
		{"zero wait", "wait: 0s", "", "wait"},
		{"negative settle", "settle: -1s", "", "settle"},
		{"zero rollout_wait", "rollout_wait: 0s", "", "rollout_wait"},
		{"negative split.job_ttl", "split: {job_ttl: -5m}", "", "split.job_ttl"},
		{"zero flush_interval", "", "flush_interval: 0s", "flush_interval"},
		{"negative lock_hold", "", "lock_hold: -1ms", "lock_hold"},
		{"unknown processor key", "rollout_atribute: x", "", "rollout_atribute"},
		{"unknown exporter key", "", "captur_dir: /tmp", "captur_dir"},
		{"invalid rollout_id_pattern", `rollout_id_pattern: "[a-"`, "", "rollout_id_pattern"},
		{"empty-matching rollout_id_pattern", `rollout_id_pattern: "x*"`, "", "rollout_id_pattern"},
		{"unknown format", "", "format: protobuf", "format"},
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
			for _, args := range [][]string{{"validate", "--config", f}, {"--config", f}} {
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
