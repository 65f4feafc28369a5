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
	p := plainPath(s.URLFull)
	if p == "" {
		p = plainPath(s.HTTPURL)
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

// plainPath is the path of URL s as url.Parse gives it, read without
// parsing when s is a plain http(s) URL (host[:port], no escape, no control
// byte or space): after the authority, up to the query or fragment. Most
// CLIENT spans are no tool calls, and this spares each a parse.
func plainPath(s string) string {
	rest, ok := strings.CutPrefix(s, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "https://")
	}
	if !ok || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '%' }) {
		return urlPath(s)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if !plainHostPort(rest[:end]) {
		return urlPath(s)
	}
	rest = rest[end:]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// plainHostPort reports whether s is a host name or IPv4 address with an
// optional numeric port, which url.Parse takes as it is.
func plainHostPort(s string) bool {
	host, port, hasPort := strings.Cut(s, ":")
	if host == "" {
		return false
	}
	for _, c := range host {
		if !hostChar(c) {
			return false
		}
	}
	if hasPort {
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// hostChar reports whether c may stand in a plain host name.
func hostChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}
