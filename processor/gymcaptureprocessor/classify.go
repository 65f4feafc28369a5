// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

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
// viewer's rule). The attributes of a span that can be one
// (modelcall.Candidate) are read in one pass (modelcall.ReadAttributes).
func (t serviceTypes) kindOf(span ptrace.Span, service, serverType string) modelcall.Kind {
	s := modelcall.Span{Name: span.Name(), ServerType: serverType, Service: service}
	switch span.Kind() {
	case ptrace.SpanKindServer:
		s.Kind = "SERVER"
	case ptrace.SpanKindClient:
		s.Kind = "CLIENT"
	}
	if !modelcall.Candidate(s.Name, s.Kind, serverType) {
		return modelcall.NotModelCall // most spans: no attribute looked up
	}
	modelcall.ReadAttributes(span.Attributes(), &s)
	s.CalleeType = t[s.PeerService]
	return modelcall.KindOf(s)
}

// call is span as the join sees it.
func call(span ptrace.Span) modelcall.Call {
	id := ""
	if v, ok := span.Attributes().Get(gymconv.ModelRequestIDAttribute); ok && v.Type() == pcommon.ValueTypeStr {
		id = modelcall.Bound(v.Str())
	}
	return modelcall.Call{RequestID: id, Start: int64(span.StartTimestamp()), End: int64(span.EndTimestamp())}
}
