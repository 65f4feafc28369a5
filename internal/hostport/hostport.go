// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package hostport reads the network address a span shows from its
// attributes (a SERVER span's own, the one a CLIENT span called), in one normalized form ("host:port", host lower-cased, an IPv6
// host bracketed), so that the gym processor (which learns host:port →
// service from SERVER spans, design §4.4) and the service map (which folds
// host:port edges into services) agree on every address.
package hostport // import "github.com/otelcol-gym/otelcol-gym/internal/hostport"

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Join returns "host:port" from two attributes when both are present (the
// port as an int or a string), else "".
func Join(attrs pcommon.Map, hostKey, portKey string) string {
	h, ok := attrs.Get(hostKey)
	if !ok || h.Type() != pcommon.ValueTypeStr || h.Str() == "" {
		return ""
	}
	p, ok := attrs.Get(portKey)
	if !ok {
		return ""
	}
	var port string
	switch p.Type() {
	case pcommon.ValueTypeInt:
		port = strconv.FormatInt(p.Int(), 10)
	case pcommon.ValueTypeStr:
		port = p.Str()
	default:
		return ""
	}
	if port == "" {
		return ""
	}
	host := h.Str()
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // IPv6
	}
	return strings.ToLower(host) + ":" + port
}

// Server is the host:port a SERVER span was reached at: server.address and
// server.port, else net.host.name and net.host.port, else http.host when it
// holds a port; "" when none is present.
func Server(attrs pcommon.Map) string {
	if hp := Join(attrs, string(conventions.ServerAddressKey), string(conventions.ServerPortKey)); hp != "" {
		return hp
	}
	if hp := Join(attrs, string(oldconventions.NetHostNameKey), string(oldconventions.NetHostPortKey)); hp != "" {
		return hp
	}
	if v, ok := attrs.Get(string(oldconventions.HTTPHostKey)); ok && v.Type() == pcommon.ValueTypeStr && strings.Contains(v.Str(), ":") {
		return strings.ToLower(v.Str())
	}
	return ""
}

// Client is the host:port a CLIENT span called: from url.full or
// http.url, else server.address and server.port (net.peer.name/port).
func Client(attrs pcommon.Map) string {
	for _, k := range []string{string(conventions.URLFullKey), string(oldconventions.HTTPURLKey)} {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			if hp := fromURL(v.Str()); hp != "" {
				return hp
			}
		}
	}
	if hp := Join(attrs, string(conventions.ServerAddressKey), string(conventions.ServerPortKey)); hp != "" {
		return hp
	}
	return Join(attrs, string(oldconventions.NetPeerNameKey), string(oldconventions.NetPeerPortKey))
}

// fromURL returns the host:port of an absolute URL ("scheme://[user@]
// host[:port]/..."); a URL without a port gets its scheme's (80 for http,
// 443 for https). It parses by hand: it runs for every CLIENT span.
func fromURL(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return ""
	}
	scheme, rest := raw[:i], raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	if rest == "" || strings.ContainsAny(rest, " \t") {
		return ""
	}
	host := strings.ToLower(rest)
	// A port follows the last ':' unless that ':' is inside an IPv6 literal.
	if c := strings.LastIndexByte(host, ':'); c >= 0 && c > strings.LastIndexByte(host, ']') {
		if c == len(host)-1 {
			return ""
		}
		return host
	}
	switch strings.ToLower(scheme) {
	case "http":
		return host + ":80"
	case "https":
		return host + ":443"
	}
	return host
}
