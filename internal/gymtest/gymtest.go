// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymtest is what the tests of several packages share. It builds
// Gym-shaped OTLP traces for tests and benchmarks:
// spans described by name (Span, their ids derived from the names) sent by
// processes (Process, one resource each), and Gym's default preset of a
// rollout (Rollout, gym.go) as NeMo Gym emits it. Build turns the
// descriptions into ptrace.Traces, deterministically: the same input gives
// the same bytes. It is imported only by tests and the benchmark harness.
package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"crypto/sha256"
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Base is the time the offsets of Span count from.
var Base = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// SpanID is the span id of the span named name: the first 8 bytes of
// SHA-256("span/" + name).
func SpanID(name string) pcommon.SpanID {
	s := sha256.Sum256([]byte("span/" + name))
	var id pcommon.SpanID
	copy(id[:], s[:8])
	return id
}

// TraceID is the trace id of the trace named name: the first 16 bytes of
// SHA-256("trace/" + name).
func TraceID(name string) pcommon.TraceID {
	s := sha256.Sum256([]byte("trace/" + name))
	var id pcommon.TraceID
	copy(id[:], s[:16])
	return id
}

// Process is a sending process: the resource of its spans.
type Process struct {
	// Service, Host and PID are service.name, host.name and process.pid.
	Service, Host string
	PID           int64
	// Run, when set, is nemo.run.id, and service.instance.id is Run+"-rank0".
	Run string
	// ServerType, when set, is nemo.gym.server.type.
	ServerType string
	// Scope and ScopeVersion name the instrumentation scope of its spans.
	Scope, ScopeVersion string
	// Attributes are more resource attributes, put after those above in
	// the order of their keys.
	Attributes map[string]any
}

// Span describes one span. Its ids are SpanID(ID), SpanID(Parent) (none
// when Parent is "") and TraceID(Trace); Start and End are milliseconds
// after Base.
type Span struct {
	ID, Parent, Trace, Name string
	Kind                    ptrace.SpanKind
	// Proc is the key of its process in the map given to Build.
	Proc       string
	Attributes map[string]any
	Start, End int64
	// Flags are the span's OTLP flags (0: none, as older SDKs send).
	Flags uint32
}

// Build returns one ResourceSpans per process of order that sends any of
// spans (in that order), each with one ScopeSpans holding its spans in the
// order of spans. It panics on an attribute value pcommon cannot hold.
func Build(procs map[string]Process, order []string, spans []Span) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, pn := range order {
		var ss ptrace.SpanSlice
		for _, d := range spans {
			if d.Proc != pn {
				continue
			}
			if ss == (ptrace.SpanSlice{}) {
				ss = appendProcess(td, procs[pn])
			}
			appendSpan(ss, d)
		}
	}
	return td
}

func appendProcess(td ptrace.Traces, p Process) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	ra := rs.Resource().Attributes()
	ra.PutStr(gymconv.ServiceNameAttribute, p.Service)
	ra.PutStr("host.name", p.Host)
	ra.PutInt("process.pid", p.PID)
	if p.Run != "" {
		ra.PutStr(gymconv.RunAttribute, p.Run)
		ra.PutStr("service.instance.id", p.Run+"-rank0")
	}
	if p.ServerType != "" {
		ra.PutStr(gymconv.ServerTypeAttribute, p.ServerType)
	}
	keys := make([]string, 0, len(p.Attributes))
	for k := range p.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := ra.PutEmpty(k).FromRaw(p.Attributes[k]); err != nil {
			panic(err)
		}
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(p.Scope)
	ss.Scope().SetVersion(p.ScopeVersion)
	return ss.Spans()
}

func appendSpan(ss ptrace.SpanSlice, d Span) {
	base := Base.UnixNano()
	s := ss.AppendEmpty()
	s.SetName(d.Name)
	s.SetKind(d.Kind)
	s.SetTraceID(TraceID(d.Trace))
	s.SetSpanID(SpanID(d.ID))
	if d.Parent != "" {
		s.SetParentSpanID(SpanID(d.Parent))
	}
	s.SetStartTimestamp(pcommon.Timestamp(base + d.Start*int64(time.Millisecond)))
	s.SetEndTimestamp(pcommon.Timestamp(base + d.End*int64(time.Millisecond)))
	s.SetFlags(d.Flags)
	if err := s.Attributes().FromRaw(d.Attributes); err != nil {
		panic(err)
	}
}

// EachSpan calls f with every span of td and its resource, in order.
func EachSpan(td ptrace.Traces, f func(res pcommon.Resource, span ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rs.Resource(), spans.At(k))
			}
		}
	}
}
