// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// standaloneOnPorts is config/standalone.yaml with its fixed loopback ports
// replaced by free ones, so the shipped file itself is what runs.
func standaloneOnPorts(t *testing.T, p ports) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "standalone.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer(
		"127.0.0.1:4317", fmt.Sprintf("127.0.0.1:%d", p.GRPC),
		"127.0.0.1:4318", fmt.Sprintf("127.0.0.1:%d", p.HTTP),
		"127.0.0.1:13133", fmt.Sprintf("127.0.0.1:%d", p.Health),
		"127.0.0.1:13180", fmt.Sprintf("127.0.0.1:%d", p.View),
		"port: 8888", fmt.Sprintf("port: %d", p.Metrics),
	).Replace(string(b))
	if cfg == string(b) {
		t.Fatal("standalone.yaml no longer holds the default ports")
	}
	return cfg
}

// sendSpans exports one small Gym-like rollout tree through tp and returns
// the hex span ids. ForceFlush returns the exporter's error, so a refused
// export fails the test at the client.
func sendSpans(t *testing.T, tp *sdktrace.TracerProvider, rollout string) []string {
	t.Helper()
	tr := tp.Tracer("e2e")
	ctx, root := tr.Start(context.Background(), "gym.rollout",
		trace.WithAttributes(attribute.String("nemo.gym.rollout.id", rollout)))
	_, client := tr.Start(ctx, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("nemo.gym.rollout.id", rollout),
			attribute.String("url.full", "http://127.0.0.1:9/ng-rollout/"+rollout+"/v1/responses")))
	client.End()
	root.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatalf("export to the collector failed: %v", err)
	}
	return []string{root.SpanContext().SpanID().String(), client.SpanContext().SpanID().String()}
}

func gymResource(server string) *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("service.name", "nemo-gym/"+server),
		attribute.String("nemo.gym.server.name", server),
		attribute.String("nemo.run.id", "e2e-run"),
	)
}

// TestStandaloneEndToEnd: the built binary on the shipped standalone config
// takes traces over OTLP gRPC and HTTP and metrics over OTLP HTTP from the
// real Go SDK, writes the spans under a capture dir it creates 0750, and exits
// cleanly on SIGTERM.
func TestStandaloneEndToEnd(t *testing.T) {
	p := newPorts(t)
	captureDir := filepath.Join(t.TempDir(), "captures")
	cfgPath := writeFile(t, t.TempDir(), "standalone.yaml", standaloneOnPorts(t, p))
	col := startCollector(t, p, []string{"NEMO_GYM_CAPTURE_DIR=" + captureDir}, "--config", cfgPath)

	fi, err := os.Stat(captureDir)
	if err != nil {
		t.Fatalf("capture dir not created: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o750 {
		t.Errorf("capture dir created %o, want 750", perm)
	}

	ctx := context.Background()
	grpcExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", p.GRPC)))
	if err != nil {
		t.Fatal(err)
	}
	grpcTP := sdktrace.NewTracerProvider(sdktrace.WithBatcher(grpcExp), sdktrace.WithResource(gymResource("simple_agent")))
	httpExp, err := otlptracehttp.New(ctx, otlptracehttp.WithInsecure(),
		otlptracehttp.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", p.HTTP)))
	if err != nil {
		t.Fatal(err)
	}
	httpTP := sdktrace.NewTracerProvider(sdktrace.WithBatcher(httpExp), sdktrace.WithResource(gymResource("policy_model")))

	want := append(sendSpans(t, grpcTP, "0-0"), sendSpans(t, httpTP, "0-1")...)
	for _, tp := range []*sdktrace.TracerProvider{grpcTP, httpTP} {
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}

	metricExp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", p.HTTP)))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(time.Hour))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(gymResource("orchestrator")))
	counter, err := mp.Meter("e2e").Int64Counter("gym.e2e.rollouts")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 3)
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("metrics export refused: %v", err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	if err := col.stop(); err != nil {
		t.Fatalf("collector did not exit cleanly on SIGTERM: %v", err)
	}

	spans, err := os.ReadFile(filepath.Join(captureDir, "spans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range want {
		if n := strings.Count(string(spans), id); n == 0 {
			t.Errorf("span %s is not in spans.jsonl", id)
		}
	}
	metrics, err := os.ReadFile(filepath.Join(captureDir, "otel-metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), "gym.e2e.rollouts") {
		t.Errorf("the metric is not in otel-metrics.jsonl:\n%s", metrics)
	}
}

// TestEmbeddedDefault starts the binary with no --config: it must run the
// embedded standalone config on its fixed loopback ports. Skipped when one of
// those ports is taken on this machine.
func TestEmbeddedDefault(t *testing.T) {
	for _, port := range []int{4317, 4318, 13133, 13180, 8888} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Skipf("port %d is in use here; the embedded default needs it", port)
		}
		l.Close()
	}
	captureDir := filepath.Join(t.TempDir(), "captures")
	col := startCollector(t, ports{Health: 13133}, []string{"NEMO_GYM_CAPTURE_DIR=" + captureDir})
	for _, port := range []int{4317, 4318, 13180, 8888} {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("embedded default does not listen on 127.0.0.1:%d: %v", port, err)
			continue
		}
		c.Close()
	}
	if _, err := os.Stat(captureDir); err != nil {
		t.Errorf("embedded default did not create NEMO_GYM_CAPTURE_DIR: %v", err)
	}
	// The rollout viewer (gymview) serves the same capture dir (design §8).
	resp, err := http.Get("http://127.0.0.1:13180/api/runs")
	if err != nil {
		t.Errorf("embedded default does not serve the viewer on 127.0.0.1:13180: %v", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" || !strings.Contains(string(body), `"runs":[]`) {
			t.Errorf("viewer on 13180: %s, CSP %q, body %s", resp.Status, resp.Header.Get("Content-Security-Policy"), body)
		}
	}
	if err := col.stop(); err != nil {
		t.Fatalf("exit on SIGTERM: %v", err)
	}
}

// TestComponents: `otelcol-gym components` lists ours with the rest of design §3.
func TestComponents(t *testing.T) {
	out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "components")
	if err != nil {
		t.Fatalf("components: %v\n%s", err, out)
	}
	for _, name := range []string{
		"name: gym", "name: gymspans", "name: otlp", "name: prometheus", "name: batch", "name: memory_limiter",
		"name: groupbytrace", "name: transform", "name: resource", "name: attributes", "name: filter",
		"name: tail_sampling", "name: otlp_http", "name: debug", "name: file", "name: health_check",
		"name: pprof", "name: zpages", "name: file_storage", "name: bearertokenauth", "name: gymview",
		"name: load_balancing", "name: span_metrics", "name: groupbyattrs", "name: gymcapture", "name: gymgenai", "name: gymforward",
	} {
		if !strings.Contains(out, name+"\n") {
			t.Errorf("components does not list %q", name)
		}
	}
}

func newHTTPTracerProvider(t *testing.T, port int, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithInsecure(),
		otlptracehttp.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", port)))
	if err != nil {
		t.Fatal(err)
	}
	server := strings.TrimPrefix(service, "nemo-gym/")
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(gymResource(server)))
}
