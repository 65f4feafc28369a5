// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// stall is a rollout in flight whose last sign of life is older than the
// threshold: when that was, where it was seen, and the call it waits on.
type stall struct {
	IdleMS  float64 `json:"idle_ms"` // since its last sign of life
	At      string  `json:"at"`      // its last sign of life, RFC 3339 UTC
	Seen    place   `json:"seen"`
	WaitsOn place   `json:"waits_on"`
}

// place is a Gym server and a call on it, and how the viewer knows.
type place struct {
	Server string `json:"server,omitempty"`
	Call   string `json:"call,omitempty"`
	How    string `json:"how,omitempty"`
}

// callKind is what a call of a rollout is in Gym's agent loop.
type callKind int

const (
	noCall callKind = iota
	runCall
	modelCall
	toolCall
	verifyCall
)

// modelRoute is the model-server route of a capture line's dialect.
var modelRoute = map[string]string{"responses": "/v1/responses", "chat": "/v1/chat/completions", "messages": "/v1/messages"}

// call is one call of a rollout: a CLIENT or SERVER span with a route, a
// gym.model.* or gym.verify span, or a capture line.
type call struct {
	kind   callKind
	route  string // without the /ng-rollout/<id> prefix
	server string // the server called, when known
	end    int64
}

// callOf classifies a span as a call of Gym's agent loop: a model call
// when markModelCalls marked it (the agent's call to its own /v1/responses
// is none: it holds the whole loop), else by its route.
func callOf(s *viewSpan) call {
	c := call{end: s.endAbs, route: gymRoute(spanPath(s))}
	switch {
	case s.ModelCall:
		c.kind, c.server = modelCall, s.Service
		if s.Kind == "CLIENT" && strings.Contains(spanPath(s), "/"+gymconv.URLPrefix+"/") {
			c.server = str(s.attrs.PeerService) // the agent's call: the model server is its peer
		}
		return c
	case s.Name == "gym.verify":
		c.kind, c.route, c.server = verifyCall, "/verify", s.Service
		return c
	case s.Kind != "SERVER" && s.Kind != "CLIENT":
		return c
	}
	switch {
	case c.route == "" || c.route == "/" || modelRouteOf(c.route):
		return c
	case c.route == "/verify":
		c.kind = verifyCall
	case c.route == "/run":
		c.kind = runCall
	default:
		c.kind = toolCall
	}
	if s.Kind == "SERVER" {
		c.server = s.Service
	} else {
		c.server = str(s.attrs.PeerService)
	}
	return c
}

// modelRouteOf reports whether a route ends with a model-server route.
func modelRouteOf(route string) bool {
	for _, r := range modelRoute {
		if strings.HasSuffix(route, r) {
			return true
		}
	}
	return false
}

// spanPath is the URL path a span shows: url.path, http.target, the path
// of url.full or http.url, else the path of a "METHOD /path" name.
func spanPath(s *viewSpan) string {
	for _, p := range []string{str(s.attrs.URLPath), str(s.attrs.HTTPTarget)} {
		if p != "" {
			p, _, _ = strings.Cut(p, "?")
			return p
		}
	}
	for _, u := range []string{str(s.attrs.URLFull), str(s.attrs.HTTPURL)} {
		if pu, err := url.Parse(u); err == nil && pu.Path != "" {
			return pu.Path
		}
	}
	if _, p, ok := strings.Cut(s.Name, " "); ok && strings.HasPrefix(p, "/") {
		return p
	}
	return ""
}

// gymRoute is a path without Gym's /ng-rollout/<id> and
// /training-token-capture prefixes.
func gymRoute(p string) string {
	if rest, ok := strings.CutPrefix(p, "/"+gymconv.URLPrefix+"/"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			p = rest[i:]
		} else {
			p = "/"
		}
		p = strings.TrimPrefix(p, "/training-token-capture")
	}
	return p
}

// describeStall says where a rollout in flight was last seen and which call
// it waits on, from its spans and its capture lines (tools: what its last
// capture line asked for); runModel names the run's model server and route
// when the rollout's own files do not (a rollout held at its first model
// call). A call still running has no span in the file yet (the gym
// processor holds its ASGI receive span until the SERVER span it belongs to
// ends), so the call waited on is the next one in Gym's agent loop (model,
// tools, model, …, verify) after the last call that returned.
func describeStall(spans []*viewSpan, xs []*exchange, tools []string, runModel func() (server, route string)) (seen, waits place) {
	markModelCalls(spans)
	var latest *viewSpan
	var last call
	var m modelOf
	resources := ""
	for _, s := range spans {
		if latest == nil || s.endAbs > latest.endAbs {
			latest = s
		}
		c := callOf(s)
		switch c.kind {
		case noCall:
			continue
		case modelCall:
			m.note(c.server, c.route, s.Kind == "SERVER")
		case toolCall, verifyCall:
			if c.server != "" && (resources == "" || s.Kind == "SERVER") {
				resources = c.server
			}
		}
		if c.kind != runCall && c.end >= last.end {
			last = c
		}
	}
	if latest != nil {
		c := callSpan(latest, spans)
		seen = place{Server: c.Service, Call: spanCall(c), How: "the latest span of its spans file ended then"}
	}
	if n := len(xs); n > 0 {
		x := xs[n-1]
		m.note(x.Model, modelRoute[x.Dialect], false)
		if latest == nil || x.endAbs > latest.endAbs {
			seen = place{Server: x.Model, Call: fmt.Sprintf("model call %d (%s)", n, exchangeStatus(x)),
				How: "its capture file's last model exchange completed then"}
		}
		if x.endAbs >= last.end {
			last = call{kind: modelCall, end: x.endAbs}
		}
	}
	return seen, nextCall(last.kind, tools, &m, resources, runModel)
}

// modelOf is the model server of a rollout, from its model calls: a SERVER
// span's service over the others.
type modelOf struct {
	server, route string
	fromServer    bool
}

func (m *modelOf) note(server, route string, fromServer bool) {
	if server != "" && (m.server == "" || (fromServer && !m.fromServer)) {
		m.server, m.fromServer = server, fromServer
	}
	if route != "" && m.route == "" {
		m.route = route
	}
}

// nextCall is the call Gym's agent loop makes after a call of kind last.
func nextCall(last callKind, tools []string, m *modelOf, resources string, runModel func() (string, string)) place {
	res := resources
	if res == "" {
		res = "the resources server"
	}
	switch {
	case last == verifyCall:
		return place{Call: "the end of its /run", How: "its verify call returned"}
	case last == modelCall && len(tools) > 0:
		return place{Server: res, Call: "POST /" + strings.Join(tools, ", POST /") + ", or the model call after it",
			How: "its last model call asked for this tool; a tool call's spans reach the capture dir only when the agent's " +
				"episode ends (and without telemetry never), so whether the tool returned is not known yet"}
	case last == modelCall:
		return place{Server: res, Call: "POST /verify", How: "its last model call gave a final answer: verify comes next"}
	}
	if (m.server == "" || m.route == "") && runModel != nil {
		server, route := runModel()
		m.note(server, route, false)
	}
	model := place{Server: m.server, Call: "POST " + m.route}
	if model.Server == "" {
		model.Server = "the model server"
	}
	if m.route == "" {
		model.Call = "POST " + modelRoute["responses"]
	}
	if last == toolCall {
		model.How = "its last tool call returned: the agent's next step is a model call"
	} else {
		model.How = "no model or tool call of it has returned yet: the agent's first step is a model call"
	}
	return model
}

// callSpan is the call s is part of: s, or for an ASGI http receive or
// send span (which may end after its request's response, an ASGI
// disconnect) its nearest SERVER or CLIENT ancestor in spans.
func callSpan(s *viewSpan, spans []*viewSpan) *viewSpan {
	for depth := 0; depth < 8 && s.Kind == "INTERNAL" && !strings.HasPrefix(s.Name, "gym.") && s.ParentID != ""; depth++ {
		var parent *viewSpan
		for _, p := range spans {
			if p.SpanID == s.ParentID {
				parent = p
				break
			}
		}
		if parent == nil {
			break
		}
		s = parent
	}
	return s
}

// spanCall names a span's call: its name, with the route when the name is
// only a method (a prefixed FastAPI SERVER span, an aiohttp CLIENT span).
func spanCall(s *viewSpan) string {
	if strings.Contains(s.Name, "/") || s.Kind == "INTERNAL" {
		return s.Name
	}
	if p := spanPath(s); p != "" {
		return s.Name + " " + p
	}
	return s.Name
}

func exchangeStatus(x *exchange) string {
	if x.ErrorCategory != "" {
		return x.ErrorCategory
	}
	return fmt.Sprint("status ", x.StatusCode)
}

// rfc3339 formats a unix-ns time for the pages.
func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
