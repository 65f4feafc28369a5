// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv

import (
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// parentlessRoutes are the routes Gym's processes call with no traceparent
// by design (nemo-gym 0.7.0): each server's start-up fetch of the global
// config from the head server, and the end-of-run /aggregate_metrics. A
// SERVER span of one of them with no parent is what a correct run sends.
var parentlessRoutes = [...]string{"/global_config_dict_yaml", "/aggregate_metrics"}

// ParentlessByDesign reports whether a SERVER span (its name and
// attributes) is a request Gym makes without a traceparent by design: its
// route (http.route), path (url.path, http.target, the path of url.full or
// http.url) or, when it has none of these, the path in its name ("GET
// /aggregate_metrics") is one of parentlessRoutes.
func ParentlessByDesign(name string, attrs pcommon.Map) bool {
	for _, k := range []string{string(conventions.HTTPRouteKey), string(conventions.URLPathKey), string(oldconventions.HTTPTargetKey)} {
		if v, ok := attrs.Get(k); ok {
			return isParentlessRoute(v.AsString())
		}
	}
	for _, k := range []string{string(conventions.URLFullKey), string(oldconventions.HTTPURLKey)} {
		if v, ok := attrs.Get(k); ok {
			u, err := url.Parse(v.AsString())
			return err == nil && isParentlessRoute(u.Path)
		}
	}
	_, path, ok := strings.Cut(name, " ")
	return ok && isParentlessRoute(path)
}

func isParentlessRoute(path string) bool {
	path, _, _ = strings.Cut(path, "?")
	for _, r := range parentlessRoutes {
		if path == r {
			return true
		}
	}
	return false
}
