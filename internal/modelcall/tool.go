// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// gymEndpoints are the routes of Gym's own servers that are no tools: a
// resources server's verify and seed_session, an agent's run, and what a
// server answers about itself.
var gymEndpoints = map[string]bool{
	"verify": true, "seed_session": true, "run": true, "aggregate_metrics": true, "health": true, "metrics": true,
}

// ToolName is the tool a CLIENT span may call (design §4.7): the last
// segment of its URL's path (url.full, else http.url), when the path is no
// model route and the segment is none of Gym's own endpoints and has the
// characters of a route name ([A-Za-z0-9][A-Za-z0-9._-]*, at most
// MaxString bytes); "" otherwise. Whether the callee is a tool is for the
// caller to tell (the model asked for one of that name, or the callee is a
// resources server).
func ToolName(s Span) string {
	if s.Kind != "CLIENT" {
		return ""
	}
	p := urlPath(s.URLFull)
	if p == "" {
		p = urlPath(s.HTTPURL)
	}
	if p == "" || hasRoute(p) {
		return ""
	}
	name := p[strings.LastIndexByte(p, '/')+1:]
	if gymEndpoints[name] || len(name) > MaxString || !gymconv.ValidRolloutID(name) {
		return ""
	}
	return name
}
