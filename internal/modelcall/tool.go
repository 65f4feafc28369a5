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
// parsing when s is a plain http(s) URL (plainHTTPPath). Most CLIENT spans
// are no tool or model calls, and this spares each a parse.
func plainPath(s string) string {
	if p, ok := plainHTTPPath(s); ok {
		return p
	}
	return urlPath(s)
}

// plainHTTPPath is the path of s, read in one pass, when s is an http(s)
// URL that url.Parse takes as it is: no escape, control byte or space, and a
// plain host[:port] (plainHostPort); after the authority, up to the query
// or fragment. ok is false for any other s.
func plainHTTPPath(s string) (path string, ok bool) {
	rest, ok := strings.CutPrefix(s, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "https://")
	}
	if !ok {
		return "", false
	}
	// The authority ends at the first '/', '?' or '#'; the path at the
	// first '?' or '#' after it.
	end, stop := len(rest), len(rest)
	for i := 0; i < len(rest); i++ {
		switch urlBytes[rest[i]] {
		case plainByte:
		case badByte:
			return "", false
		case pathEndByte:
			if stop == len(rest) {
				end, stop = min(end, i), i
			}
		case slashByte:
			end = min(end, i)
		}
	}
	if !plainHostPort(rest[:end]) {
		return "", false
	}
	return rest[end:stop], true
}

// What plainHTTPPath makes of a byte of a URL: a table, one load a byte
// (most are plain).
const (
	plainByte   = iota
	badByte     // a control byte, space, DEL or '%': url.Parse may refuse or unescape it
	pathEndByte // '?' or '#'
	slashByte   // '/'
)

var urlBytes = func() (t [256]uint8) {
	for c := 0; c <= ' '; c++ {
		t[c] = badByte
	}
	t[0x7f], t['%'] = badByte, badByte
	t['?'], t['#'] = pathEndByte, pathEndByte
	t['/'] = slashByte
	return t
}()

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
