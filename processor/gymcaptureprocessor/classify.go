// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// maxServices bounds the service → server type table the CLIENT spans'
// peer.service is looked up in.
const maxServices = 4096

// serviceTypes learns each service's nemo.gym.server.type from the
// resources that pass, so that a CLIENT span to an agent (its own
// /v1/responses) is told from one to a model server.
type serviceTypes map[string]string

func (t serviceTypes) learn(service, serverType string) {
	if service == "" || serverType == "" {
		return
	}
	if _, ok := t[service]; ok || len(t) < maxServices {
		t[service] = serverType
	}
}

// kindOf says which kind of model call span is (modelcall.KindOf, the
// viewer's rule).
func (t serviceTypes) kindOf(span ptrace.Span, service, serverType string) modelcall.Kind {
	kind := ""
	switch span.Kind() {
	case ptrace.SpanKindServer:
		kind = "SERVER"
	case ptrace.SpanKindClient:
		kind = "CLIENT"
	default:
		if !strings.HasPrefix(span.Name(), "gym.model.") {
			return modelcall.NotModelCall // most spans: no attribute looked up
		}
	}
	attrs := span.Attributes()
	get := func(k string) string {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			return v.Str()
		}
		return ""
	}
	return modelcall.KindOf(modelcall.Span{
		Name: span.Name(), Kind: kind, ServerType: serverType,
		URLPath: get(string(conventions.URLPathKey)), HTTPTarget: get(string(oldconventions.HTTPTargetKey)),
		HTTPRoute: get(string(conventions.HTTPRouteKey)), URLFull: get(string(conventions.URLFullKey)),
		HTTPURL: get(string(oldconventions.HTTPURLKey)), CalleeType: t[get(string(conventions.PeerServiceKey))],
		Service: service, PeerService: get(string(conventions.PeerServiceKey)),
	})
}

// call is span as the join sees it.
func call(span ptrace.Span) modelcall.Call {
	id := ""
	if v, ok := span.Attributes().Get(gymconv.ModelRequestIDAttribute); ok && v.Type() == pcommon.ValueTypeStr {
		id = modelcall.Bound(v.Str())
	}
	return modelcall.Call{RequestID: id, Start: int64(span.StartTimestamp()), End: int64(span.EndTimestamp())}
}
