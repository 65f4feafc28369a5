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

func (t serviceTypes) learn(service, serverType string) { learnBounded(t, service, serverType) }

// learnBounded sets m[k] = v for non-empty k and v while m has fewer than
// maxServices keys (a key already there is always updated).
func learnBounded(m map[string]string, k, v string) {
	if k == "" || v == "" {
		return
	}
	if _, ok := m[k]; ok || len(m) < maxServices {
		m[k] = v
	}
}

// kindOf says which kind of model call span is (modelcall.KindOf, the
// viewer's rule). The attributes of a span that can be one
// (modelcall.Candidate) are read in one pass (modelcall.ReadAttributes);
// s is what was read of the span (its URL attributes only when it may be a
// model call at all: a CLIENT span, a gym.model.* span, a model server's
// SERVER span).
func (t serviceTypes) kindOf(span ptrace.Span, service, serverType string, s *modelcall.Span) modelcall.Kind {
	*s = modelcall.Span{Name: span.Name(), ServerType: serverType, Service: service}
	switch span.Kind() {
	case ptrace.SpanKindServer:
		s.Kind = "SERVER"
	case ptrace.SpanKindClient:
		s.Kind = "CLIENT"
	}
	if !modelcall.Candidate(s.Name, s.Kind, serverType) {
		return modelcall.NotModelCall // most spans: no attribute looked up
	}
	modelcall.ReadAttributes(span.Attributes(), s)
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

// providerTable is each model server's (service's) gen_ai.provider.name,
// learned from its calls to its LLM (modelcall.Provider).
type providerTable map[string]string

func (t providerTable) learn(service, provider string) { learnBounded(t, service, provider) }

// of is the provider of a model-call span of kind k in service, read as s:
// a caller's CLIENT span's is its callee's.
func (t providerTable) of(k modelcall.Kind, service string, s *modelcall.Span) string {
	if k == modelcall.Client {
		return t[s.PeerService]
	}
	return t[service]
}
