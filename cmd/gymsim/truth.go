// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// truthLine is one line of the truth file: a span as it was created, with the
// rollout it belongs to by design §4.2 ("" for spans in no rollout, and for
// every span when observability is off).
type truthLine struct {
	SpanID    string `json:"span_id"`
	TraceID   string `json:"trace_id"`
	Service   string `json:"service"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	RolloutID string `json:"rollout_id"`
}

// truthWriter appends truth lines to one file per process (the orchestrator
// concatenates the parts at the end) and counts the spans created, which is
// also gymsim's throughput figure. With no file it only counts.
type truthWriter struct {
	created atomic.Int64

	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

func newTruthWriter(path string) (*truthWriter, error) {
	t := &truthWriter{}
	if path == "" {
		return t, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening the truth file: %w", err)
	}
	t.f, t.w = f, bufio.NewWriterSize(f, 1<<16)
	return t, nil
}

func kindName(k trace.SpanKind) string {
	switch k {
	case trace.SpanKindServer:
		return "SERVER"
	case trace.SpanKindClient:
		return "CLIENT"
	case trace.SpanKindProducer:
		return "PRODUCER"
	case trace.SpanKindConsumer:
		return "CONSUMER"
	default:
		return "INTERNAL"
	}
}

func (t *truthWriter) record(sc trace.SpanContext, service, name string, kind trace.SpanKind, rollout string) {
	t.created.Add(1)
	if t.w == nil {
		return
	}
	line, err := json.Marshal(truthLine{
		SpanID:    sc.SpanID().String(),
		TraceID:   sc.TraceID().String(),
		Service:   service,
		Name:      name,
		Kind:      kindName(kind),
		RolloutID: rollout,
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	if err != nil {
		t.err = err
		return
	}
	line = append(line, '\n')
	if _, err := t.w.Write(line); err != nil {
		t.err = err
	}
}

// close flushes and closes the file; it reports the first error of any write.
func (t *truthWriter) close() error {
	if t.f == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = t.w.Flush()
	}
	if err := t.f.Close(); t.err == nil {
		t.err = err
	}
	if t.err != nil {
		return fmt.Errorf("writing the truth file: %w", t.err)
	}
	return nil
}

// concatTruth writes the parts, in order, to dst and removes them.
func concatTruth(dst string, parts []string) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("opening the truth file: %w", err)
	}
	for _, p := range parts {
		in, err := os.Open(p)
		if err != nil {
			out.Close()
			return fmt.Errorf("reading a truth part: %w", err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if err != nil {
			out.Close()
			return fmt.Errorf("copying a truth part: %w", err)
		}
		if err := os.Remove(p); err != nil {
			out.Close()
			return fmt.Errorf("removing a truth part: %w", err)
		}
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("closing the truth file: %w", err)
	}
	return nil
}
