// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

// How the rollout page names a span (issue #53, item 4): Gym's model, tool
// and verify SERVER spans are all named by their method alone ("POST"), so
// a page of them reads "POST, POST, POST"; the page shows the method with
// the route the request took, without Gym's /ng-rollout/<id> prefix
// ("POST /v1/responses", "POST /verify"). The span's own name stays in its
// details and its tooltip.

// httpMethods are the span names that are a method alone.
var httpMethods = map[string]bool{
	"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true,
}

// spanLabel is what the page shows for v, or "" when that is its name: the
// route as the stall rule reads it (spanPath, gymRoute: stall.go).
func spanLabel(v *viewSpan) string {
	if !httpMethods[v.Name] {
		return ""
	}
	route := gymRoute(spanPath(v))
	if route == "" || route[0] != '/' {
		return ""
	}
	return v.Name + " " + route
}

// isASGIEvent: the span is one of an ASGI server's per-message spans
// ("POST /run http receive", "… http send"), which the page folds into
// their server span until asked.
func isASGIEvent(k spanKeys) bool { return k.ASGIEventType != nil }
