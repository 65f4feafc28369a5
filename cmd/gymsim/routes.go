// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// toolName is the one tool the resources server offers.
const toolName = "get_weather"

// gymServer holds what the route handlers of one server process share.
type gymServer struct {
	cfg     *config
	m       *spanMaker
	client  *httpClient
	capture *captureStore
	self    string // this server's host:port (the agent calls itself)
	warm    warmUp // the model server's cold start (--cold-start)
}

// warmUp is a model server that answers nothing before coldStart after its
// first request: the first wave of a run meets a cold or loaded vLLM server,
// and its model calls all end after that.
type warmUp struct {
	once      sync.Once
	readyAt   time.Time
	coldStart time.Duration
}

// wait returns once the server is warm.
func (w *warmUp) wait() {
	if w.coldStart <= 0 {
		return
	}
	w.once.Do(func() { w.readyAt = time.Now().Add(w.coldStart) })
	if d := time.Until(w.readyAt); d > 0 {
		time.Sleep(d) // the simulated server is busy loading
	}
}

// routesFor returns the router of a role: path → route and the rollout id
// the path carries. FastAPI matches registered routes only, so a prefixed
// path to the model or resources server matches none (span name "POST"),
// while the agent registers the templated /ng-rollout/{rollout_id}/ route.
func (g *gymServer) routesFor(role string) func(string) (route, string, bool) {
	type table map[string]route
	var plain table
	var prefixed table // by the path after the prefix
	switch role {
	case roleAgent:
		plain = table{"/run": {"/run", g.run}, "/v1/responses": {"/v1/responses", g.agentResponses}}
		prefixed = table{"/v1/responses": {rolloutPrefix + "{rollout_id}/v1/responses", g.agentResponses}}
	case roleModel:
		plain = table{"/v1/responses": {"/v1/responses", g.modelResponses}}
		prefixed = table{"/v1/responses": {"", g.modelResponses}}
	case roleResources:
		plain = table{"/verify": {"/verify", g.verify}, "/" + toolName: {"/" + toolName, g.toolCall}}
		prefixed = table{"/verify": {"", g.verify}, "/" + toolName: {"", g.toolCall}}
	}
	return func(path string) (route, string, bool) {
		rollout, rest := splitRolloutPath(path)
		if rollout == "" {
			rt, ok := plain[path]
			return rt, "", ok
		}
		rt, ok := prefixed[rest]
		return rt, rollout, ok
	}
}

func (g *gymServer) nameAttr() attribute.KeyValue {
	return attribute.String("nemo.gym.server.name", g.cfg.serverName(g.cfg.role))
}

func rolloutAttrs(rollout string, attrs ...attribute.KeyValue) []attribute.KeyValue {
	if rollout != "" {
		attrs = append(attrs, attribute.String(gymconv.RolloutAttribute, rollout))
	}
	return attrs
}

// run is the agent's /run: Gym opens the rollout context and gym.rollout
// inside it, calls its own prefixed /v1/responses (the agent loop) and then
// the resources server's /verify.
func (g *gymServer) run(ctx context.Context, _ string, req *simRequest) (int, any, error) {
	rollout := ""
	if g.cfg.observability {
		rollout = rolloutID(req.TaskIndex, req.RolloutIndex, req.AttemptIndex)
		ctx = withRollout(ctx, rollout)
	}
	ctx, span := g.m.startManaged(ctx, groupRollout, gymconv.RolloutSpanName, rollout, rolloutAttrs(rollout, g.nameAttr())...)
	err := func() error {
		loop := &simRequest{FailModelCall: req.FailModelCall}
		if _, err := g.client.post(ctx, "http://"+g.self+prefix(rollout)+"/v1/responses", loop, nil, rollout); err != nil {
			return err
		}
		if _, err := g.client.post(ctx, "http://"+g.cfg.resourcesAddr+prefix(rollout)+"/verify", &simRequest{FailModelCall: -1}, nil, rollout); err != nil {
			return err
		}
		if req.FailAttempt {
			return &simError{typ: "RuntimeError", msg: "agent loop aborted; the rollout will be re-dispatched"}
		}
		return nil
	}()
	endSpan(span, err)
	if err != nil {
		return http.StatusInternalServerError, nil, err
	}
	return http.StatusOK, map[string]any{"reward": 1.0, "rollout_id": rollout}, nil
}

// agentResponses is the agent loop: model calls, with the tool calls after
// the first. It runs in a new request, so the rollout context is unset (as in
// Gym); the rollout id is known only from the path, and the model and tool
// URLs carry the prefix.
func (g *gymServer) agentResponses(ctx context.Context, rollout string, req *simRequest) (int, any, error) {
	ctx, span := g.m.startManaged(ctx, groupAgent, "gym.agent.responses", rollout, g.nameAttr())
	for i := 0; i < g.cfg.modelCalls; i++ {
		call := &simRequest{FailModelCall: -1, Fail: i == req.FailModelCall}
		// A failed model call is on the spans; the loop goes on as Gym's retry would.
		_, _ = g.client.post(ctx, "http://"+g.cfg.modelAddr+prefix(rollout)+"/v1/responses", call, nil, rollout)
		if i == 0 {
			for j := 0; j < g.cfg.toolCalls; j++ {
				if _, err := g.client.post(ctx, "http://"+g.cfg.resourcesAddr+prefix(rollout)+"/"+toolName, &simRequest{FailModelCall: -1}, nil, rollout); err != nil {
					endSpan(span, err)
					return http.StatusInternalServerError, nil, err
				}
			}
		}
	}
	endSpan(span, nil)
	return http.StatusOK, map[string]any{"id": "resp_" + newModelCallID()[:24], "object": "response", "status": "completed"}, nil
}

// modelResponses is the model server's /v1/responses: gym.model.responses
// around the (simulated) upstream call, and a capture line keyed by the
// rollout id of the path. As in Gym 0.7.0, whose model server opens the
// rollout context from the /ng-rollout/ path, gym.model.responses carries
// the rollout id.
func (g *gymServer) modelResponses(ctx context.Context, rollout string, req *simRequest) (int, any, error) {
	mctx, span := g.m.startManaged(ctx, groupModelCall, "gym.model.responses", rollout, rolloutAttrs(rollout, g.nameAttr())...)
	started := time.Now()
	upstream := g.startUpstreamCall(mctx, rollout)
	g.warm.wait()
	if d := g.cfg.rolloutDuration / time.Duration(g.cfg.modelCalls); d > 0 {
		time.Sleep(d) // the model's latency: what makes a rollout last
	}
	completed := time.Now()
	respID := "resp_" + newModelCallID()[:24]
	status := http.StatusOK
	var err error
	var category *string
	resp := map[string]any{"id": respID, "object": "response", "status": "completed",
		"output": []any{map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "ok"}}}},
		"model":  g.cfg.modelName, "usage": simUsage()}
	if req.Fail {
		status = http.StatusInternalServerError
		err = &simError{typ: "openai.InternalServerError", msg: "Error code: 500 - upstream model failed"}
		c := "upstream_error"
		category = &c
		resp = map[string]any{"error": map[string]any{"message": "upstream model failed", "code": 500}}
	}
	if upstream != nil {
		upstream.SetAttributes(conventions.HTTPResponseStatusCodeKey.Int(status))
		endSpan(upstream, err)
	}
	if span != nil {
		span.SetAttributes(attribute.String("nemo.gym.model_request.id", respID))
	}
	endSpan(span, err)
	if g.cfg.observability && rollout != "" {
		lat := float64(completed.Sub(started).Microseconds()) / 1000
		cerr := g.capture.write(rollout, &captureLine{
			ModelCallID:   newModelCallID(),
			Dialect:       "responses",
			ModelRef:      captureModelRef{Type: gymconv.ServerTypeModel, Name: g.cfg.modelName},
			StartedAt:     float64(started.UnixMicro()) / 1e6,
			CompletedAt:   float64(completed.UnixMicro()) / 1e6,
			LatencyMS:     lat,
			LatencyTTFTMS: simTTFT(lat),
			StatusCode:    status,
			ErrorCategory: category,
			Request:       map[string]any{"model": g.cfg.modelName, "input": "What is the weather?"},
			Response:      resp,
		})
		if cerr != nil && err == nil {
			return http.StatusInternalServerError, nil, cerr
		}
	}
	return status, resp, err
}

// startUpstreamCall starts the CLIENT span of the model server's call to its
// LLM, which Gym makes through server_utils.request like every other call
// (the LLM itself is simulated: no request leaves, so no SERVER span and no
// traceparent). Gym 0.7.0's model server runs it in the rollout context it
// opened from the /ng-rollout/ path, so it carries the rollout id; its URL
// is the LLM's, with no prefix. Nil with http_client off.
func (g *gymServer) startUpstreamCall(ctx context.Context, rollout string) trace.Span {
	if !g.m.groups[groupHTTPClient] {
		return nil
	}
	_, span := g.m.client.Start(ctx, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		rolloutAttrs(rollout,
			conventions.HTTPRequestMethodKey.String(http.MethodPost),
			conventions.URLFullKey.String(g.cfg.modelUpstream+"/responses"))...))
	g.m.record(span, "HTTP POST", trace.SpanKindClient, rollout)
	return span
}

// verify is the resources server's /verify, gym.verify around it.
func (g *gymServer) verify(ctx context.Context, rollout string, _ *simRequest) (int, any, error) {
	_, span := g.m.startManaged(ctx, groupVerify, "gym.verify", rollout, rolloutAttrs(rollout, g.nameAttr())...)
	endSpan(span, nil)
	return http.StatusOK, map[string]any{"reward": 1.0}, nil
}

// toolCall is a resources-server tool route, gym.tool_call around it and
// the tool's sandbox command in gym.sandbox.exec (which, as in Gym, carries
// no rollout id of its own).
func (g *gymServer) toolCall(ctx context.Context, rollout string, _ *simRequest) (int, any, error) {
	ctx, span := g.m.startManaged(ctx, groupToolCall, "gym.tool_call", rollout,
		rolloutAttrs(rollout, attribute.String("nemo.gym.tool.name", toolName), g.nameAttr())...)
	_, exec := g.m.startManaged(ctx, groupSandbox, "gym.sandbox.exec", rollout,
		attribute.String("nemo.gym.sandbox.provider", "local"), attribute.Int("nemo.gym.sandbox.return_code", 0))
	endSpan(exec, nil)
	endSpan(span, nil)
	return http.StatusOK, map[string]any{"output": "sunny"}, nil
}
