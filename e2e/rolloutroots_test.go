// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestRolloutRootsAutoFollowsTheConfiguration: the built binary's gymspans
// exporter, with rollout_roots: auto, writes rollouts.jsonl from the gym
// processor's root marks when the configuration has a gym processor in a
// pipeline, and from parentless spans when it has none (here: configured,
// but in no pipeline, so never created). The rollout under a gym.job, with
// split off, keeps its parent: only the mark makes it a root. The rollout
// without a job is parentless: only the guess makes it one when nothing
// marks.
func TestRolloutRootsAutoFollowsTheConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name       string
		processors string
		underJob   bool
		want       func(top string) []string
	}{
		{"gym processor, rollout under a job", "[memory_limiter, gym, gymcapture]", true, func(top string) []string { return []string{"0-0 " + top} }},
		{"no gym processor, parentless rollout", "[memory_limiter, gymcapture]", false, func(top string) []string { return []string{"0-0 " + top} }},
		{"no gym processor, rollout under a job", "[memory_limiter, gymcapture]", true, func(string) []string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPorts(t)
			captureDir := filepath.Join(t.TempDir(), "captures")
			cfg := standaloneOnPorts(t, p)
			edited := strings.NewReplacer(
				"      processors: [memory_limiter, gym, gymcapture]\n", "      processors: "+tc.processors+"\n",
				"    storage: file_storage/gym\n", "    storage: file_storage/gym\n    split:\n      enabled: false\n",
			).Replace(cfg)
			if strings.Count(edited, "enabled: false") != strings.Count(cfg, "enabled: false")+1 || !strings.Contains(edited, "processors: "+tc.processors) {
				t.Fatal("standalone.yaml no longer has the gym processor's storage line or the traces pipeline's processors")
			}
			cfgPath := writeFile(t, t.TempDir(), "standalone.yaml", edited)
			col := startCollector(t, p, []string{"NEMO_GYM_CAPTURE_DIR=" + captureDir}, "--config", cfgPath)

			root := sendRolloutUnder(t, p, tc.underJob)
			if err := col.stop(); err != nil {
				t.Fatalf("collector did not exit cleanly on SIGTERM: %v", err)
			}

			var got []string
			b, err := os.ReadFile(filepath.Join(captureDir, "rollouts.jsonl"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if l == "" {
					continue
				}
				var line struct {
					RolloutID  string `json:"rollout_id"`
					RootSpanID string `json:"root_span_id"`
				}
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("rollouts.jsonl line %q: %v", l, err)
				}
				got = append(got, line.RolloutID+" "+line.RootSpanID)
			}
			want := tc.want(root)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rollouts.jsonl roots %q, want %q", got, want)
			}
		})
	}
}

// sendRolloutUnder sends rollout 0-0 over OTLP HTTP: gym.rollout and its
// CLIENT span, under Gym's dispatch (gym.job → the orchestrator's HTTP POST
// /run → the agent's POST /run) when underJob. It returns the hex span id
// of the rollout's top span (the dispatch, or gym.rollout).
func sendRolloutUnder(t *testing.T, p ports, underJob bool) string {
	t.Helper()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithInsecure(), otlptracehttp.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", p.HTTP)))
	if err != nil {
		t.Fatal(err)
	}
	orch := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(
		attribute.String("service.name", "nemo-gym/orchestrator"),
		attribute.String("nemo.gym.server.type", "orchestrator"),
		attribute.String("nemo.run.id", "e2e-run"))))
	agent := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(gymResource("simple_agent")))
	top := ctx
	var above []trace.Span // ended after the rollout, innermost first
	if underJob {
		var job, dispatch, run trace.Span
		top, job = orch.Tracer("e2e").Start(top, "gym.job")
		top, dispatch = orch.Tracer("e2e").Start(top, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("url.full", "http://127.0.0.1:8000/run")))
		top, run = agent.Tracer("e2e").Start(top, "POST /run", trace.WithSpanKind(trace.SpanKindServer))
		above = []trace.Span{run, dispatch, job}
	}
	rolloutCtx, rollout := agent.Tracer("e2e").Start(top, "gym.rollout", trace.WithAttributes(attribute.String("nemo.gym.rollout.id", "0-0")))
	_, client := agent.Tracer("e2e").Start(rolloutCtx, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("nemo.gym.rollout.id", "0-0")))
	client.End()
	rollout.End()
	topID := rollout.SpanContext().SpanID().String()
	for i, s := range above {
		s.End()
		if i == 1 {
			topID = s.SpanContext().SpanID().String() // the dispatch
		}
	}
	for _, tp := range []*sdktrace.TracerProvider{agent, orch} {
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("export to the collector failed: %v", err)
		}
	}
	return topID
}
