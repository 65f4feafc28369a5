// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportStats is what one process's TracerProvider did with its spans.
type exportStats struct {
	ended    int64 // spans ended (handed to the batch span processor)
	exported int64 // spans the collector accepted
	failed   int64 // spans in exports that returned an error
	errors   int64 // errors reported to the OTel error handler (e.g. partial success)
}

// dropped are the spans the batch span processor never exported: its queue
// was full (without --blocking) or shutdown gave up.
func (s exportStats) dropped() int64 { return s.ended - s.exported - s.failed }

func (s exportStats) ok() bool { return s.failed == 0 && s.errors == 0 && s.dropped() == 0 }

func (s exportStats) add(o exportStats) exportStats {
	return exportStats{
		ended:    s.ended + o.ended,
		exported: s.exported + o.exported,
		failed:   s.failed + o.failed,
		errors:   s.errors + o.errors,
	}
}

func (s exportStats) String() string {
	return fmt.Sprintf("ended=%d exported=%d failed=%d dropped=%d errors=%d", s.ended, s.exported, s.failed, s.dropped(), s.errors)
}

// provider is one process's TracerProvider with its accounting.
type provider struct {
	tp       *sdktrace.TracerProvider
	ended    atomic.Int64
	exported atomic.Int64
	failed   atomic.Int64
	errs     atomic.Int64
}

// newProvider builds a TracerProvider like nemo-lens does: an OTLP exporter
// (gRPC or HTTP/protobuf) behind a batch span processor, with the process's
// resource. Export errors are counted and logged (at most a few) to stderr.
func newProvider(ctx context.Context, c *config, stderr io.Writer) (*provider, error) {
	res, err := newResource(c)
	if err != nil {
		return nil, err
	}
	exp, err := newExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	p := &provider{}
	var logged atomic.Int64
	var mu sync.Mutex
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		p.errs.Add(1)
		if logged.Add(1) <= 5 {
			mu.Lock()
			fmt.Fprintf(stderr, "gymsim %s: otel: %v\n", c.role, err)
			mu.Unlock()
		}
	}))
	queue := c.queueSize
	if queue == 0 {
		queue = 2048
		if c.blocking {
			queue = 1 << 16
		}
	}
	opts := []sdktrace.BatchSpanProcessorOption{
		sdktrace.WithBatchTimeout(c.batchDelay),
		sdktrace.WithMaxQueueSize(queue),
		sdktrace.WithMaxExportBatchSize(512),
	}
	if c.blocking {
		opts = append(opts, sdktrace.WithBlocking())
	}
	p.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(endCounter{&p.ended}),
		sdktrace.WithBatcher(&countingExporter{SpanExporter: exp, p: p, stderr: stderr, role: c.role, unackedPath: unackedPath(c.truth)}, opts...),
	)
	return p, nil
}

func newExporter(ctx context.Context, c *config) (sdktrace.SpanExporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if !c.telemetry {
		return discard{}, nil
	}
	withScheme := strings.Contains(c.endpoint, "://")
	switch c.protocol {
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithInsecure()}
		switch {
		case withScheme:
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.endpoint))
		case c.endpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(c.endpoint))
		default:
			opts = append(opts, otlptracegrpc.WithEndpoint("127.0.0.1:4317"))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		opts := []otlptracehttp.Option{otlptracehttp.WithInsecure()}
		switch {
		case withScheme:
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.endpoint, "/")+"/v1/traces"))
		case c.endpoint != "":
			opts = append(opts, otlptracehttp.WithEndpoint(c.endpoint))
		default:
			opts = append(opts, otlptracehttp.WithEndpoint("127.0.0.1:4318"))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP %s exporter: %w", c.protocol, err)
	}
	return exp, nil
}

// shutdown flushes every queued span and stops the provider.
func (p *provider) shutdown(ctx context.Context) (exportStats, error) {
	err := p.tp.Shutdown(ctx)
	st := exportStats{
		ended:    p.ended.Load(),
		exported: p.exported.Load(),
		failed:   p.failed.Load(),
		errors:   p.errs.Load(),
	}
	if err != nil {
		return st, fmt.Errorf("shutting down the tracer provider: %w", err)
	}
	return st, nil
}

// endCounter counts the spans ended in a process.
type endCounter struct{ n *atomic.Int64 }

func (e endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endCounter) OnEnd(sdktrace.ReadOnlySpan)                     { e.n.Add(1) }
func (e endCounter) Shutdown(context.Context) error                  { return nil }
func (e endCounter) ForceFlush(context.Context) error                { return nil }

// countingExporter counts what the OTLP exporter accepted and what failed,
// and, with a truth file, writes the span ids of every failed export (after
// the exporter's own retries) to <truth part>.unacked: spans the collector
// never acknowledged, which a crash test counts apart.
type countingExporter struct {
	sdktrace.SpanExporter
	p           *provider
	stderr      io.Writer
	role        string
	logged      atomic.Int64
	unackedPath string
	mu          sync.Mutex
}

// unackedPath is where a process with truth part truth lists the spans it
// could not export ("" without a truth file).
func unackedPath(truth string) string {
	if truth == "" {
		return ""
	}
	return truth + ".unacked"
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.p.failed.Add(int64(len(spans)))
		e.recordUnacked(spans)
		if e.logged.Add(1) <= 5 {
			fmt.Fprintf(e.stderr, "gymsim %s: exporting %d spans: %v\n", e.role, len(spans), err)
		}
		return err
	}
	e.p.exported.Add(int64(len(spans)))
	return nil
}

func (e *countingExporter) recordUnacked(spans []sdktrace.ReadOnlySpan) {
	if e.unackedPath == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := os.OpenFile(e.unackedPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		fmt.Fprintf(e.stderr, "gymsim %s: %v\n", e.role, err)
		return
	}
	defer f.Close()
	var b []byte
	for _, s := range spans {
		b = append(b, s.SpanContext().SpanID().String()...)
		b = append(b, '\n')
	}
	_, _ = f.Write(b)
}

// discard is the exporter of a process whose telemetry is off: its spans go
// nowhere.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
