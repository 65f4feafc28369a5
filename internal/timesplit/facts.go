// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Span is what the split keeps of a span: 40 bytes, whatever the span held.
type Span struct {
	ID, Parent uint64 // span ids; Parent 0: none
	Start, End int64  // Unix nanoseconds
	Role       Role
}

// Process is what Facts reads of a span's resource: its service, its
// nemo.gym.server.type, and the server type of a service (nil: unknown),
// for a CLIENT span's peer.service.
type Process struct {
	Service, ServerType string
	TypeOf              func(service string) string
}

// IsEvent reports whether span is an ASGI message event by its kind and
// name (Event), which most spans are: what Facts says of it without reading
// its attributes. An event told by its attribute only is not.
func IsEvent(span ptrace.Span) bool {
	kind := span.Kind()
	return kind != ptrace.SpanKindServer && kind != ptrace.SpanKindClient && asgiEventName(span.Name())
}

// Facts is what the split keeps of span, from process p. It reads the span's
// URLs, peer.service and ASGI event attribute in one pass, each key's first
// value as Map.Get gives it; those of an INTERNAL span whose name says its
// role (Gym's gym.*, the ASGI events) not at all.
func Facts(span ptrace.Span, p Process) Span {
	sid, pid := span.SpanID(), span.ParentSpanID()
	f := Span{
		ID: binary.BigEndian.Uint64(sid[:]), Parent: binary.BigEndian.Uint64(pid[:]),
		Start: int64(span.StartTimestamp()), End: int64(span.EndTimestamp()),
	}
	if IsEvent(span) {
		f.Role = Event // most spans: spared the rest
		return f
	}
	kind, name := span.Kind(), span.Name()
	info := Info{Span: modelcall.Span{Name: name, ServerType: p.ServerType, Service: p.Service}}
	switch kind {
	case ptrace.SpanKindServer:
		info.Kind = "SERVER"
	case ptrace.SpanKindClient:
		info.Kind = "CLIENT"
	}
	if info.Kind != "" || !byName(info.Name) {
		modelcall.ReadAttributes(span.Attributes(), &info.Span)
	}
	if info.Kind == "" && !byName(info.Name) {
		_, info.ASGIEvent = span.Attributes().Get(asgiEventAttribute)
	}
	if p.TypeOf != nil && info.Kind == "CLIENT" && info.PeerService != "" {
		info.CalleeType = p.TypeOf(info.PeerService)
	}
	f.Role = roleOf(&info)
	return f
}
