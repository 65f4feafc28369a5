// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// kindByGet is kindOf as a reader of Map.Get: the reference the one-pass
// read is held to.
func kindByGet(t serviceTypes, span ptrace.Span, service, serverType string) modelcall.Kind {
	kind := map[ptrace.SpanKind]string{ptrace.SpanKindServer: "SERVER", ptrace.SpanKindClient: "CLIENT"}[span.Kind()]
	get := func(k string) string {
		if v, ok := span.Attributes().Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			return v.Str()
		}
		return ""
	}
	return modelcall.KindOf(&modelcall.Span{
		Name: span.Name(), Kind: kind, ServerType: serverType,
		URLPath: get("url.path"), HTTPTarget: get("http.target"), HTTPRoute: get("http.route"),
		URLFull: get("url.full"), HTTPURL: get("http.url"), CalleeType: t[get("peer.service")],
		Service: service, PeerService: get("peer.service"),
	})
}

// TestKindOfReadsAsGet: on spans decoded from the wire, where a key can come
// twice and a value need not be a string, kindOf says what Map.Get's reading
// says, for random spans made of the attributes the rule reads.
func TestKindOfReadsAsGet(t *testing.T) {
	keys := []string{"url.path", "http.target", "http.route", "url.full", "http.url", "peer.service", "http.method"}
	values := []string{
		`{"stringValue":"/ng-rollout/1-0/v1/responses"}`, `{"stringValue":"http://m/ng-rollout/1-0/v1/responses"}`,
		`{"stringValue":"http://llm/v1/chat/completions"}`, `{"stringValue":"http://m/v1/%72esponses"}`,
		`{"stringValue":"/run"}`, `{"stringValue":"nemo-gym/policy_model"}`, `{"stringValue":"nemo-gym/simple_agent"}`,
		`{"intValue":"7"}`, `{"stringValue":""}`,
	}
	types := serviceTypes{"nemo-gym/policy_model": "responses_api_models", "nemo-gym/simple_agent": "responses_api_agents"}
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[modelcall.Kind]int{}
	for i := range 20000 {
		var attrs []string
		for range rng.IntN(6) {
			attrs = append(attrs, fmt.Sprintf(`{"key":%q,"value":%s}`, keys[rng.IntN(len(keys))], values[rng.IntN(len(values))]))
		}
		doc := fmt.Sprintf(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":%q,"kind":%d,"attributes":[%s]}]}]}]}`,
			[]string{"POST", "HTTP POST", "gym.model.responses", "POST /v1/responses"}[rng.IntN(4)], 1+rng.IntN(3), strings.Join(attrs, ","))
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(doc))
		require.NoError(t, err)
		span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		service := []string{"nemo-gym/simple_agent", "nemo-gym/policy_model", ""}[rng.IntN(3)]
		serverType := []string{"responses_api_agents", "responses_api_models", ""}[rng.IntN(3)]
		var s modelcall.Span
		got := types.kindOf(span, service, serverType, &s)
		require.Equal(t, kindByGet(types, span, service, serverType), got, "case %d: %s, service %q, server type %q", i, doc, service, serverType)
		kinds[got]++
	}
	for k := modelcall.Upstream; k < modelcall.Kinds; k++ {
		require.Positive(t, kinds[k], "no random span was of kind %d", k)
	}
}
