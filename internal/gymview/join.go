// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"net/url"
	"sort"
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// modelRoutes are the model-server routes a capture line records.
var modelRoutes = []string{"/v1/responses", "/v1/chat/completions", "/v1/messages"}

// The kinds of model-call span, best first: a rollout's model calls are the
// spans of the best kind it has. gym.model.* exists in the per_rollout and
// all presets; the model server's SERVER span whenever the model server is
// instrumented; the caller's CLIENT span otherwise.
const (
	notModelCall = iota
	modelCallClient
	modelCallServer
	modelCallManaged
)

// modelCallKind says which kind of model-call span s is. serviceType maps a
// service to its nemo.gym.server.type; calleeType is the server type of the
// SERVER span s called, when that span is in the file.
func modelCallKind(s *viewSpan, calleeType string, serviceType map[string]string) int {
	switch {
	case strings.HasPrefix(s.Name, "gym.model."):
		return modelCallManaged
	case s.Kind == "SERVER" && s.serverType == gymconv.ServerTypeModel && hasModelRoute(str(s.attrs.URLPath), str(s.attrs.HTTPTarget), str(s.attrs.HTTPRoute), s.Name):
		return modelCallServer
	case s.Kind == "CLIENT" && hasModelRoute(urlPath(str(s.attrs.URLFull)), urlPath(str(s.attrs.HTTPURL))):
		// An agent's call to its own /v1/responses is not a model call.
		if calleeType == "" {
			calleeType = serviceType[str(s.attrs.PeerService)]
		}
		if calleeType != gymconv.ServerTypeAgent {
			return modelCallClient
		}
	}
	return notModelCall
}

func hasModelRoute(paths ...string) bool {
	for _, p := range paths {
		for _, r := range modelRoutes {
			if strings.HasSuffix(p, r) {
				return true
			}
		}
	}
	return false
}

func urlPath(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Path
}

// markModelCalls sets ModelCall on the rollout's model-call spans and
// returns them by start time.
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
	best := notModelCall
	kinds := make([]int, len(spans))
	for i, s := range spans {
		kinds[i] = modelCallKind(s, calleeType[s.SpanID], serviceType)
		best = max(best, kinds[i])
	}
	var calls []*viewSpan
	if best == notModelCall {
		return nil
	}
	for i, s := range spans {
		if kinds[i] == best {
			s.ModelCall = true
			calls = append(calls, s)
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].startAbs < calls[j].startAbs })
	return calls
}

// joinExchanges joins each capture line to a model-call span. A capture line
// holds no span id: a line whose response id is a span's
// nemo.gym.model_request.id joins that span; the others join, in time
// order, the unjoined span they overlap most; when lines and spans are left
// over in equal numbers (clocks apart), they join in order.
func joinExchanges(calls []*viewSpan, xs []*exchange) {
	byRequestID := map[string]int{}
	for i, s := range calls {
		if id := str(s.attrs.ModelRequestID); id != "" {
			byRequestID[id] = i
		}
	}
	taken := make([]bool, len(calls))
	join := func(x *exchange, i int, how string) {
		taken[i] = true
		x.SpanID, x.Match = calls[i].SpanID, how
	}
	var rest []*exchange
	for _, x := range xs {
		if i, ok := byRequestID[x.ResponseID]; ok && x.ResponseID != "" && !taken[i] {
			join(x, i, "response_id")
			continue
		}
		rest = append(rest, x)
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].startAbs < rest[j].startAbs })
	var left []*exchange
	for _, x := range rest {
		bestI, bestOverlap := -1, int64(0)
		for i, s := range calls {
			if taken[i] {
				continue
			}
			if o := min(x.endAbs, s.endAbs) - max(x.startAbs, s.startAbs); o > bestOverlap {
				bestI, bestOverlap = i, o
			}
		}
		if bestI < 0 {
			left = append(left, x)
			continue
		}
		join(x, bestI, "time")
	}
	var free []int
	for i := range calls {
		if !taken[i] {
			free = append(free, i)
		}
	}
	if len(free) == len(left) {
		for k, x := range left {
			join(x, free[k], "time")
		}
	}
}
