// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"net/url"
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// routes are the model-server routes a capture line records; each begins
// with routePrefix.
var routes = []string{"/v1/responses", "/v1/chat/completions", "/v1/messages"}

const routePrefix = "/v1/"

// Kind is the kind of a model-call span. A rollout's model calls are, for
// the viewer, the spans of the best kind it has (the greatest Kind); the
// processor joins each kind on its own, so every model-call span of a
// rollout gets its capture line.
type Kind int

// The kinds, best last. gym.model.* exists in the per_rollout and all
// presets; the model server's SERVER span whenever the model server is
// instrumented; the caller's CLIENT span otherwise.
const (
	NotModelCall Kind = iota
	// Upstream is a model server's own CLIENT call to its LLM: a model
	// call of the same exchange as the agent's CLIENT span to the model
	// server, kept apart so the two do not compete for one capture line.
	// It is told by its process (nemo.gym.server.type) or, for senders
	// without it (generic OpenTelemetry instrumentation), by its URL: Gym
	// routes a rollout's calls to its model server through
	// /ng-rollout/<id>/, and the model server's call to its LLM never.
	Upstream
	Client
	Server
	Managed
	// Kinds is the number of kinds, NotModelCall included.
	Kinds
)

// Span is what Kind reads of a span. Kind is "SERVER", "CLIENT" or another
// kind's short name; the rest are attribute values, "" when absent.
type Span struct {
	Name       string
	Kind       string
	ServerType string // nemo.gym.server.type of its resource
	URLPath    string
	HTTPTarget string
	HTTPRoute  string
	URLFull    string
	HTTPURL    string
	// CalleeType is the server type of the service the CLIENT span called:
	// its SERVER child's, else peer.service's; "" when unknown.
	CalleeType string
	// Service is the span's service; PeerService its peer.service.
	Service, PeerService string
}

// Candidate reports whether a span of this name, kind ("SERVER", "CLIENT",
// ...) and process server type can be a model call at all: KindOf reads the
// attributes of no other span, and a caller may skip reading them.
func Candidate(name, kind, serverType string) bool {
	return strings.HasPrefix(name, "gym.model.") || kind == "CLIENT" ||
		(kind == "SERVER" && serverType == gymconv.ServerTypeModel)
}

// KindOf says which kind of model-call span s is.
func KindOf(s *Span) Kind {
	switch {
	case !Candidate(s.Name, s.Kind, s.ServerType):
		return NotModelCall
	case strings.HasPrefix(s.Name, "gym.model."):
		return Managed
	case s.Kind == "SERVER" && s.ServerType == gymconv.ServerTypeModel &&
		hasRoute(s.URLPath, s.HTTPTarget, s.HTTPRoute, s.Name):
		return Server
	case s.Kind == "CLIENT":
		full, old, ok := clientPaths(s.URLFull, s.HTTPURL)
		switch {
		case !ok || !hasRoute(full, old):
			return NotModelCall
		case s.ServerType == gymconv.ServerTypeModel,
			s.ServerType == "" && !hasRolloutPrefix(full, old):
			return Upstream
		case s.CalleeType != gymconv.ServerTypeAgent && (s.PeerService == "" || s.PeerService != s.Service):
			// An agent's call to its own /v1/responses is not a model call:
			// its callee is an agent, or (no server types) its own service.
			return Client
		}
	}
	return NotModelCall
}

// clientPaths are the paths of a CLIENT span's URLs; ok is false when
// neither may end with a route (mayHoldRoute: most CLIENT spans are no
// model calls, and a URL that holds no route is not read further).
func clientPaths(full, old string) (fullPath, oldPath string, ok bool) {
	if !mayHoldRoute(full) && !mayHoldRoute(old) {
		return "", "", false
	}
	fp, fok := plainHTTPPath(full)
	op, ook := plainHTTPPath(old)
	if (fok || full == "") && (ook || old == "") {
		return fp, op, true
	}
	return urlPath(full), urlPath(old), true
}

// OnRoute reports whether path ends with a model route (/v1/responses,
// /v1/chat/completions, /v1/messages).
func OnRoute(path string) bool { return hasRoute(path) }

func hasRoute(paths ...string) bool {
	for _, p := range paths {
		for _, r := range routes {
			if strings.HasSuffix(p, r) {
				return true
			}
		}
	}
	return false
}

// mayHoldRoute reports whether the path of URL s may end with a route: a
// URL without an escape holds its path as it is, so one that does not
// contain the routes' common prefix cannot.
func mayHoldRoute(s string) bool {
	return strings.IndexByte(s, '%') >= 0 || strings.Contains(s, routePrefix)
}

// urlPath is the path of URL s as url.Parse gives it, "" when it does not
// parse.
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

// hasRolloutPrefix reports whether a path has Gym's /ng-rollout/ segment.
func hasRolloutPrefix(paths ...string) bool {
	for _, p := range paths {
		if strings.Contains(p, "/"+gymconv.URLPrefix+"/") {
			return true
		}
	}
	return false
}

// ServerRequest reports whether s is a server's handling of a request: a
// SERVER span, or a span of another kind than CLIENT with a request target
// (url.path or http.target). The ASGI instrumentation makes the server's
// span INTERNAL when a context leaked into the handler (a rollout whose
// agent took another's context, design §4.2); only its target then says
// what it is.
func ServerRequest(s *Span) bool {
	return s.Kind == "SERVER" || s.Kind != "CLIENT" && (s.URLPath != "" || s.HTTPTarget != "")
}
