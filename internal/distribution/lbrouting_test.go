// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/loadbalancingexporter"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// countingBackend is an OTLP gRPC traces server that counts the spans it takes.
type countingBackend struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
}

func (b *countingBackend) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	b.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

func startCountingBackend(t *testing.T) (*countingBackend, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBackend{}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, b)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return b, l.Addr().String()
}

// TestRoutingByRun pins what design §9 says of config/agent.yaml's routing
// (contrib load_balancing v0.161.0, routing_key: attributes,
// routing_attributes: [nemo.run.id]): spans with no nemo.run.id all go to
// one backend whatever their trace id; a trace with one process of a run and
// one without nemo.run.id is split by process, each part to its own key's
// backend, never sent twice.
func TestRoutingByRun(t *testing.T) {
	a, addrA := startCountingBackend(t)
	b, addrB := startCountingBackend(t)
	f := loadbalancingexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	conf := confmap.NewFromStringMap(map[string]any{
		"routing_key":        "attributes",
		"routing_attributes": []any{"nemo.run.id"},
		"sending_queue":      map[string]any{"enabled": false},
		"protocol": map[string]any{"otlp": map[string]any{
			"tls":           map[string]any{"insecure": true},
			"sending_queue": map[string]any{"enabled": false},
		}},
		"resolver": map[string]any{"static": map[string]any{"hostnames": []any{addrA, addrB}}},
	})
	if err := conf.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	exp, err := f.CreateTraces(t.Context(), exportertest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(t.Context(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	total := func() int64 { return a.spans.Load() + b.spans.Load() }
	waitFor := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for total() < n {
			if time.Now().After(deadline) {
				t.Fatalf("backends took %d spans, want %d", total(), n)
			}
			time.Sleep(10 * time.Millisecond) // poll interval of the counters
		}
	}

	// 40 run-less traces of one span: all on one backend.
	for i := range 40 {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "no-run")
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{byte(i + 1), 7})
		s.SetSpanID(pcommon.SpanID{byte(i + 1)})
		if err := exp.ConsumeTraces(t.Context(), td); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(40)
	runless, other := a, b
	if b.spans.Load() > a.spans.Load() {
		runless, other = b, a
	}
	if runless.spans.Load() != 40 {
		t.Fatalf("run-less spans split %d/%d over the backends, want all on one", a.spans.Load(), b.spans.Load())
	}

	// 40 traces, each of two processes: one of run-<i>, one without a run.
	sent := int64(0)
	for i := range 40 {
		td := ptrace.NewTraces()
		for _, run := range []string{fmt.Sprintf("run-%d", i), ""} {
			rs := td.ResourceSpans().AppendEmpty()
			if run != "" {
				rs.Resource().Attributes().PutStr("nemo.run.id", run)
			}
			s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			s.SetTraceID(pcommon.TraceID{byte(i + 1), 9})
			s.SetSpanID(pcommon.SpanID{byte(i + 1), byte(len(run))})
			sent++
		}
		if err := exp.ConsumeTraces(t.Context(), td); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(40 + sent)
	if got := total() - 40; got != sent {
		t.Errorf("backends took %d spans of %d sent", got, sent)
	}
	// Each trace's run-less process went to the run-less backend; its run's
	// process to its run's backend, which for some of the 40 runs is the other.
	if n := runless.spans.Load() - 40; n < 40 {
		t.Errorf("the run-less backend took %d of the second batch, want the 40 run-less spans and more", n)
	}
	if other.spans.Load() == 0 {
		t.Error("no run hashed to the other backend: the traces were not split by process")
	}
	t.Logf("40 traces of two processes (one without nemo.run.id): %d spans on the run-less backend, %d on the other, none twice",
		runless.spans.Load()-40, other.spans.Load())
}
