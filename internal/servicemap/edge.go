// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Attribute names read by EdgeFromSpan.
const (
	// DefaultRunAttribute is the resource attribute naming a span's run.
	DefaultRunAttribute = gymconv.RunAttribute
	// PeerServiceAttribute names the server service on a CLIENT span; the
	// gym processor sets it on every CLIENT span.
	PeerServiceAttribute = string(conventions.PeerServiceKey)
)

// DefaultServiceAttributes are the resource attributes naming a span's
// service, first present wins (design §4: behind gym eval submit's collector
// service.name is one routing name and the real one is the override).
var DefaultServiceAttributes = gymconv.DefaultServiceAttributes()

// Edge is one call from the client service to the server service in a run.
type Edge struct {
	Run     string
	Client  string
	Server  string
	Latency time.Duration // the CLIENT span's duration; negative counts as 0
	Error   bool          // the CLIENT span's status is ERROR
}

// EdgeFromSpan returns the edge a span shows, if any: a CLIENT span in
// service A (the first of serviceAttrs present with a non-empty value on the
// resource; nil means DefaultServiceAttributes) whose peer.service names a
// different service B. The run is the resource attribute runAttr (""
// means DefaultRunAttribute); a span without it has run "". Calls within one
// service are not edges.
func EdgeFromSpan(span ptrace.Span, resource pcommon.Resource, serviceAttrs []string, runAttr string) (Edge, bool) {
	if span.Kind() != ptrace.SpanKindClient {
		return Edge{}, false
	}
	peer, ok := span.Attributes().Get(PeerServiceAttribute)
	if !ok {
		return Edge{}, false
	}
	server := peer.AsString()
	if server == "" {
		return Edge{}, false
	}
	if serviceAttrs == nil {
		serviceAttrs = DefaultServiceAttributes
	}
	if runAttr == "" {
		runAttr = DefaultRunAttribute
	}
	attrs := resource.Attributes()
	client := gymconv.Service(attrs, serviceAttrs)
	if client == "" || client == server {
		return Edge{}, false
	}
	run := runOf(attrs, runAttr)
	var latency time.Duration
	if start, end := span.StartTimestamp(), span.EndTimestamp(); end > start {
		latency = time.Duration(min(uint64(end-start), math.MaxInt64))
	}
	return Edge{
		Run:     run,
		Client:  client,
		Server:  server,
		Latency: latency,
		Error:   span.Status().Code() == ptrace.StatusCodeError,
	}, true
}
