// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Role is what a span is to the split, told from the span and its process
// alone (RoleOf). A call's role is the category of its whole subtree: a
// verify's judge model call is verify time, a model call's upstream request
// model time.
type Role uint8

const (
	// Plain: no role of its own; its time is its nearest role's (the agent's
	// inside the agent's /run, queue or other outside it).
	Plain Role = iota
	// Event: an ASGI message event (asgi.event.type, or an INTERNAL span
	// named "<route> http receive" or "<route> http send": the children of a
	// FastAPI SERVER span): the server's I/O, not
	// work, left out of the walk so that its time is its SERVER span's. The
	// receive that waits for the client's disconnect lasts the whole request
	// and outlives its parent: taken as a child it would hide every call.
	Event
	// ModelCall: a span of a model call (modelcall.KindOf, any kind).
	ModelCall
	// ToolCall: a call to a resources server other than /verify
	// (gym.tool_call, gym.sandbox.*, a resources server's SERVER span, a
	// CLIENT span to one).
	ToolCall
	// VerifyCall: gym.verify, or a call to a /verify route.
	VerifyCall
	// AgentRun: the /run SERVER span of an agent server (its process's
	// nemo.gym.server.type says so).
	AgentRun
	// Run: a /run SERVER span of a process that does not say its type
	// (generic OpenTelemetry instrumentation): the innermost is the agent's.
	Run
	// Rollout: gym.rollout, the agent's span around its /run handler.
	Rollout
)

// Gym's span names and the ASGI instrumentation's attribute that Role reads.
const (
	verifySpanName     = "gym.verify"
	toolCallSpanName   = "gym.tool_call"
	sandboxSpanPrefix  = "gym.sandbox."
	gymSpanPrefix      = "gym."
	asgiEventAttribute = "asgi.event.type"
	asgiReceiveSuffix  = " http receive"
	asgiSendSuffix     = " http send"
)

// Gym's routes (after the /ng-rollout/<id> prefix).
const (
	runRoute    = "/run"
	verifyRoute = "/verify"
)

// Info is what RoleOf reads of a span: what modelcall.KindOf reads, and
// whether it is an ASGI message event.
type Info struct {
	modelcall.Span
	ASGIEvent bool
}

// RoleOf says what s is to the split.
func RoleOf(s Info) Role { return roleOf(&s) }

func roleOf(s *Info) Role {
	switch {
	case s.ASGIEvent, s.Kind != "SERVER" && s.Kind != "CLIENT" && asgiEventName(s.Name):
		return Event
	case modelcall.KindOf(&s.Span) != modelcall.NotModelCall:
		return ModelCall
	case s.Name == verifySpanName:
		return VerifyCall
	case s.Name == toolCallSpanName || strings.HasPrefix(s.Name, sandboxSpanPrefix):
		return ToolCall
	case s.Name == gymconv.RolloutSpanName:
		return Rollout
	case s.Kind == "CLIENT":
		return clientRole(&s.Span, route(pathOf(first(s.URLFull, s.HTTPURL))))
	case modelcall.ServerRequest(&s.Span):
		return serverRole(s.ServerType, serverRoute(&s.Span))
	}
	return Plain
}

// byName reports whether the role of an INTERNAL span of this name needs
// none of its attributes: Gym's own spans, and the ASGI events.
func byName(name string) bool {
	return strings.HasPrefix(name, gymSpanPrefix) || asgiEventName(name)
}

func asgiEventName(name string) bool {
	return strings.HasSuffix(name, asgiReceiveSuffix) || strings.HasSuffix(name, asgiSendSuffix)
}

// serverRole: a SERVER span is the agent's /run, a verify or a tool call by
// its route and its process's type. Without a type, a route that is neither
// /run nor a model route is a resources server's (a tool); a model route is
// a model server's (its caller is the model call) or the agent's own
// /v1/responses (the agent's time).
func serverRole(serverType, route string) Role {
	switch {
	case route == runRoute && serverType == gymconv.ServerTypeAgent:
		return AgentRun
	case route == runRoute && serverType == "":
		return Run
	case route == runRoute:
		return Plain
	case route == verifyRoute:
		return VerifyCall
	case serverType == gymconv.ServerTypeResources:
		return ToolCall
	case serverType == "" && route != "" && !modelcall.OnRoute(route):
		return ToolCall
	}
	return Plain
}

// clientRole: a CLIENT span that is no model call is a call to an agent
// (/run, or its own /v1/responses: the caller's time), a verify, or a tool
// call: one to a resources server, or, when the callee's type is unknown,
// one to another service on a route that is no model route.
func clientRole(s *modelcall.Span, route string) Role {
	switch {
	case route == "" || route == runRoute:
		return Plain
	case route == verifyRoute:
		return VerifyCall
	case s.CalleeType == gymconv.ServerTypeResources:
		return ToolCall
	case s.CalleeType != "",
		s.PeerService != "" && s.PeerService == s.Service,
		modelcall.OnRoute(route):
		return Plain
	}
	return ToolCall
}

// serverRoute is the route a SERVER span served: its path (url.path, else
// http.target, else the path of its URL), else its route template.
func serverRoute(s *modelcall.Span) string {
	p := s.URLPath
	if p == "" {
		p = pathOf(s.HTTPTarget)
	}
	if p == "" {
		p = pathOf(first(s.URLFull, s.HTTPURL))
	}
	if p == "" {
		p = s.HTTPRoute
	}
	return route(p)
}

// route is path without Gym's /ng-rollout/<id> prefix.
func route(path string) string {
	prefix := "/" + gymconv.URLPrefix + "/"
	if !strings.HasPrefix(path, prefix) {
		return path
	}
	rest := path[len(prefix):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return ""
}

// pathOf is the path of a URL or of a request target ("/a/b?q"), without
// query or fragment; it does not unescape. Its loop stands for
// strings.IndexAny, which builds its byte set on every call.
func pathOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		j := strings.IndexByte(u, '/')
		if j < 0 {
			return ""
		}
		u = u[j:]
	}
	for k := 0; k < len(u); k++ {
		if u[k] == '?' || u[k] == '#' {
			return u[:k]
		}
	}
	return u
}

func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
