// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"sort"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// markModelCalls sets ModelCall on the rollout's model-call spans (those of
// the best kind it has, design §8) and returns them by start time.
func markModelCalls(spans []*viewSpan) []*viewSpan {
	serviceType := map[string]string{}
	calleeType := map[string]string{} // CLIENT span id → server type of its SERVER child
	for _, s := range spans {
		if s.serverType != "" && s.Service != "" {
			serviceType[s.Service] = s.serverType
		}
		if s.Kind == "SERVER" && s.ParentID != "" {
			calleeType[s.ParentID] = s.serverType
		}
	}
	best := modelcall.NotModelCall
	kinds := make([]modelcall.Kind, len(spans))
	for i, s := range spans {
		callee := calleeType[s.SpanID]
		if callee == "" {
			callee = serviceType[str(s.attrs.PeerService)]
		}
		kinds[i] = modelcall.KindOf(&modelcall.Span{
			Name: s.Name, Kind: s.Kind, ServerType: s.serverType,
			URLPath: str(s.attrs.URLPath), HTTPTarget: str(s.attrs.HTTPTarget), HTTPRoute: str(s.attrs.HTTPRoute),
			URLFull: str(s.attrs.URLFull), HTTPURL: str(s.attrs.HTTPURL), CalleeType: callee,
			Service: s.Service, PeerService: str(s.attrs.PeerService),
		})
		best = max(best, kinds[i])
	}
	if best == modelcall.NotModelCall {
		return nil
	}
	var calls []*viewSpan
	for i, s := range spans {
		if kinds[i] == best {
			s.ModelCall = true
			calls = append(calls, s)
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].startAbs < calls[j].startAbs })
	return calls
}

// joinExchanges joins each capture line to a model-call span by the rule
// the gymcapture processor uses too (modelcall.Join), with the in-order
// fallback a whole rollout allows.
func joinExchanges(calls []*viewSpan, xs []*exchange) {
	cs := make([]modelcall.Call, len(calls))
	for i, s := range calls {
		cs[i] = modelcall.Call{RequestID: modelcall.Bound(str(s.attrs.ModelRequestID)), Start: s.startAbs, End: s.endAbs}
	}
	es := make([]modelcall.Exchange, len(xs))
	for i, x := range xs {
		es[i] = modelcall.Exchange{ResponseID: x.ResponseID, Start: x.startAbs, End: x.endAbs}
	}
	for i, m := range modelcall.Join(cs, es, true) {
		if m.Call >= 0 {
			xs[i].SpanID, xs[i].Match = calls[m.Call].SpanID, m.How
		}
	}
}
