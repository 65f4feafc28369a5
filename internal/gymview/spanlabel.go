// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

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

// spanLabel is what the page shows for a span named name, or "" when that
// is its name.
func spanLabel(name string, k spanKeys) string {
	if !httpMethods[name] {
		return ""
	}
	path := firstNonEmpty(str(k.HTTPRoute), firstNonEmpty(str(k.URLPath), str(k.HTTPTarget)))
	if path == "" {
		path = urlPath(firstNonEmpty(str(k.URLFull), str(k.HTTPURL)))
	}
	path, _, _ = strings.Cut(path, "?")
	path = withoutRolloutPrefix(path)
	if path == "" || path[0] != '/' {
		return ""
	}
	return name + " " + path
}

// urlPath is the path of an absolute URL, or "".
func urlPath(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return ""
}

// withoutRolloutPrefix cuts Gym's /ng-rollout/<id> from the front of a path
// ("/ng-rollout/4-0/v1/responses" → "/v1/responses").
func withoutRolloutPrefix(path string) string {
	rest, ok := strings.CutPrefix(path, "/"+gymconv.URLPrefix+"/")
	if !ok {
		return path
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return path
}

// isASGIEvent: the span is one of an ASGI server's per-message spans
// ("POST /run http receive", "… http send"), which the page folds into
// their server span until asked.
func isASGIEvent(k spanKeys) bool { return k.ASGIEventType != nil }
