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

// callOf classifies a span as a call of Gym's agent loop by its route.
func callOf(s *viewSpan) call {
	c := call{end: s.endAbs}
	switch {
	case strings.HasPrefix(s.Name, "gym.model."):
		c.kind, c.server = modelCall, s.Service
		return c
	case s.Name == "gym.verify":
		c.kind, c.route, c.server = verifyCall, "/verify", s.Service
		return c
	case s.Kind != "SERVER" && s.Kind != "CLIENT":
		return c
	}
	c.route = gymRoute(spanPath(s))
	switch {
	case c.route == "" || c.route == "/":
		return c
	case strings.HasSuffix(c.route, modelRoute["responses"]) || strings.HasSuffix(c.route, modelRoute["chat"]) ||
		strings.HasSuffix(c.route, modelRoute["messages"]):
		c.kind = modelCall
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
// capture line asked for). A call still running has no span in the file yet
// (the gym processor holds its ASGI receive span until the SERVER span it
// belongs to ends), so the call waited on is the next one in Gym's agent
// loop (model, tools, model, …, verify) after the last call that returned.
func describeStall(spans []*viewSpan, xs []*exchange, tools []string) (seen, waits place) {
	var latest *viewSpan
	var last call
	modelServer, modelPath, resources := "", "", ""
	for _, s := range spans {
		if latest == nil || s.endAbs > latest.endAbs {
			latest = s
		}
		c := callOf(s)
		switch c.kind {
		case noCall:
			continue
		case modelCall:
			if c.server != "" && (modelServer == "" || s.Kind == "SERVER") {
				modelServer = c.server
			}
			if c.route != "" {
				modelPath = c.route
			}
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
		seen = place{Server: latest.Service, Call: spanCall(latest), How: "the latest span of its spans file ended then"}
	}
	if n := len(xs); n > 0 {
		x := xs[n-1]
		if modelServer == "" {
			modelServer = x.Model
		}
		if modelPath == "" {
			modelPath = modelRoute[x.Dialect]
		}
		if latest == nil || x.endAbs > latest.endAbs {
			seen = place{Server: x.Model, Call: fmt.Sprintf("model call %d (%s)", n, exchangeStatus(x)),
				How: "its capture file's last model exchange completed then"}
		}
		if x.endAbs >= last.end {
			last = call{kind: modelCall, end: x.endAbs}
		}
	}
	if modelPath == "" {
		modelPath = modelRoute["responses"]
	}
	waits = nextCall(last.kind, tools, len(spans) > 0, modelServer, modelPath, resources)
	return seen, waits
}

// nextCall is the call Gym's agent loop makes after a call of kind last.
func nextCall(last callKind, tools []string, hasSpans bool, modelServer, modelPath, resources string) place {
	orUnknown := func(s, what string) string {
		if s == "" {
			return what
		}
		return s
	}
	model := place{Server: orUnknown(modelServer, "the model server"), Call: "POST " + modelPath}
	switch last {
	case noCall:
		model.How = "no call of it has returned yet: the agent's first step is a model call"
		return model
	case toolCall:
		model.How = "its last tool call returned: the agent's next step is a model call"
		return model
	case verifyCall:
		return place{Call: "the end of its /run", How: "its verify call returned"}
	}
	res := orUnknown(resources, "the resources server")
	switch {
	case len(tools) > 0 && hasSpans:
		return place{Server: res, Call: "POST /" + strings.Join(tools, ", POST /"), How: "its last model call asked for this tool"}
	case len(tools) > 0:
		return place{Server: res, Call: "POST /" + strings.Join(tools, ", POST /") + ", or the model call after it",
			How: "its last model call asked for this tool; without spans, whether the tool returned is not known"}
	}
	return place{Server: res, Call: "POST /verify", How: "its last model call gave a final answer: verify comes next"}
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
