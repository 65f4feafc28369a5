// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// rolloutPrefix is the path segment Gym puts before a rollout id.
const rolloutPrefix = "/" + gymconv.URLPrefix + "/"

// prefix is the path prefix of rollout-scoped calls ("" without a rollout).
func prefix(rollout string) string {
	if rollout == "" {
		return ""
	}
	return rolloutPrefix + rollout
}

// splitRolloutPath strips a leading /ng-rollout/<id> as Gym's middlewares do.
func splitRolloutPath(path string) (rollout, rest string) {
	if !strings.HasPrefix(path, rolloutPrefix) {
		return "", path
	}
	tail := path[len(rolloutPrefix):]
	i := strings.IndexByte(tail, '/')
	if i <= 0 {
		return "", path
	}
	return tail[:i], tail[i:]
}

// simRequest is the one request body every route reads. The _ng_ fields are
// Gym's; the sim_ fields are the orchestrator's plan for the rollout.
type simRequest struct {
	TaskIndex     int  `json:"_ng_task_index"`
	RolloutIndex  int  `json:"_ng_rollout_index"`
	AttemptIndex  int  `json:"_ng_attempt_index"`
	FailAttempt   bool `json:"sim_fail_attempt,omitempty"`
	FailModelCall int  `json:"sim_fail_model_call"`
	Fail          bool `json:"sim_fail,omitempty"`
}

// rolloutID builds Gym's rollout id: <task>-<n>, and -a<k> for a re-dispatch.
func rolloutID(task, n, attempt int) string {
	id := strconv.Itoa(task) + "-" + strconv.Itoa(n)
	if attempt > 0 {
		id += "-a" + strconv.Itoa(attempt)
	}
	return id
}

// route is one FastAPI route of a server.
type route struct {
	// template is the FastAPI route the instrumentor matched, "" when the
	// path (a prefixed one) matches no registered route.
	template string
	handle   func(ctx context.Context, rollout string, req *simRequest) (int, any, error)
}

// server is one Gym FastAPI server: its routes behind FastAPI-like
// instrumentation (a SERVER span and ASGI http receive/http send children).
type server struct {
	m       *spanMaker
	tp      trace.TracerProvider
	semconv string
	routes  func(path string) (route, string, bool) // path → route, rollout from the path
}

// spanName is FastAPI's SERVER span name: "POST <route>", or just "POST"
// when no route matched.
func spanName(method string, rt route) string {
	if rt.template == "" {
		return method
	}
	return method + " " + rt.template
}

// handler wraps the server's routes in its instrumentation: otelhttp for the
// stable HTTP semconv, a FastAPI-like middleware for the old one, nothing
// with the server group off.
func (s *server) handler() http.Handler {
	inner := http.HandlerFunc(s.serve)
	if !s.m.groups[groupServer] {
		return inner
	}
	var instrumented http.Handler
	if s.semconv == "old" {
		instrumented = s.oldSemconv(inner)
	} else {
		instrumented = otelhttp.NewHandler(inner, "",
			otelhttp.WithTracerProvider(s.tp),
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				rt, _, _ := s.routes(r.URL.Path)
				return spanName(r.Method, rt)
			}),
		)
	}
	return afterServerSpan(instrumented)
}

// afterKey holds the spans a request ends after its SERVER span ended.
type afterKey struct{}

// afterServerSpan runs next, then ends the spans serve left open: the ASGI
// http.disconnect receive, which Gym's middleware waits on from the start of
// the request until the client has its response, and which so ends after
// the SERVER span (seen in a real nemo-gym 0.7.0 run, issue #17).
func afterServerSpan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var after []trace.Span
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), afterKey{}, &after)))
		for _, sp := range after {
			sp.End()
		}
	})
}

// endAfterServerSpan has sp ended once the request's SERVER span ended.
func endAfterServerSpan(ctx context.Context, sp trace.Span) {
	if after, ok := ctx.Value(afterKey{}).(*[]trace.Span); ok {
		*after = append(*after, sp)
		return
	}
	sp.End()
}

// oldSemconv mimics opentelemetry-instrumentation-asgi 0.65b0 with the old
// HTTP conventions, FastAPI's default: http.target and http.url, no url.*.
func (s *server) oldSemconv(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := s.m.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		rt, _, _ := s.routes(r.URL.Path)
		host, port, _ := net.SplitHostPort(r.Host)
		attrs := []attribute.KeyValue{
			oldconventions.HTTPSchemeKey.String("http"),
			oldconventions.HTTPHostKey.String(r.Host),
			oldconventions.NetHostNameKey.String(host),
			oldconventions.NetHostPortKey.String(port),
			oldconventions.HTTPFlavorKey.String("1.1"),
			oldconventions.HTTPTargetKey.String(r.URL.Path),
			oldconventions.HTTPURLKey.String("http://" + r.Host + r.URL.RequestURI()),
			oldconventions.HTTPMethodKey.String(r.Method),
			oldconventions.HTTPServerNameKey.String(r.Host),
			oldconventions.HTTPUserAgentKey.String(r.UserAgent()),
		}
		if ip, pport, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			attrs = append(attrs, oldconventions.NetPeerIPKey.String(ip))
			if n, err := strconv.Atoi(pport); err == nil {
				attrs = append(attrs, oldconventions.NetPeerPortKey.Int(n))
			}
		}
		ctx, span := s.m.fastapi.Start(ctx, spanName(r.Method, rt), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(oldconventions.HTTPStatusCodeKey.Int(sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, "")
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// serve runs one request as opentelemetry-instrumentation-fastapi 0.66b1
// records it under Gym: the ASGI http.request receive, then the
// http.disconnect receive (open until after the SERVER span ends), the
// route, the http.response.start send and two http.response.body sends.
func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rt, rollout, ok := s.routes(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	name := spanName(r.Method, rt)
	serverSpan := trace.SpanFromContext(ctx)
	instrumented := s.m.groups[groupServer]
	if instrumented && rt.template != "" {
		serverSpan.SetAttributes(conventions.HTTPRouteKey.String(rt.template))
	}

	var recv trace.Span
	if instrumented {
		_, recv = s.m.asgi.Start(ctx, name+" http receive", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("asgi.event.type", "http.request")))
	}
	var req simRequest
	body, err := io.ReadAll(r.Body)
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &req)
	}
	var disc trace.Span
	if recv != nil {
		recv.End()
		_, disc = s.m.asgi.Start(ctx, name+" http receive", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("asgi.event.type", "http.disconnect")))
		endAfterServerSpan(ctx, disc)
	}
	if err != nil {
		http.Error(w, `{"detail":"bad request"}`, http.StatusBadRequest)
		return
	}
	// The rollout a server span belongs to: the one in its path, or for the
	// agent's /run the one the handler is about to open.
	truthRollout := rollout
	if truthRollout == "" && rt.template == "/run" && s.m.observability {
		truthRollout = rolloutID(req.TaskIndex, req.RolloutIndex, req.AttemptIndex)
	}
	if instrumented {
		s.m.record(serverSpan, name, trace.SpanKindServer, truthRollout)
		s.m.record(recv, name+" http receive", trace.SpanKindInternal, truthRollout)
		s.m.record(disc, name+" http receive", trace.SpanKindInternal, truthRollout)
	}

	status, resp, herr := rt.handle(ctx, rollout, &req)
	if herr != nil && status < 500 {
		status = http.StatusInternalServerError
	}
	if herr != nil {
		resp = map[string]string{"detail": herr.Error()}
	}
	out, err := json.Marshal(resp)
	if err != nil {
		status, out = http.StatusInternalServerError, []byte(`{"detail":"encoding"}`)
	}

	statusKey := string(conventions.HTTPResponseStatusCodeKey)
	if s.semconv == "old" {
		statusKey = string(oldconventions.HTTPStatusCodeKey)
	}
	var send trace.Span
	if instrumented {
		_, send = s.m.asgi.Start(ctx, name+" http send", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("asgi.event.type", "http.response.start"), attribute.Int(statusKey, status)))
		s.m.record(send, name+" http send", trace.SpanKindInternal, truthRollout)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	if send != nil {
		send.End()
		_, send = s.m.asgi.Start(ctx, name+" http send", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("asgi.event.type", "http.response.body")))
		s.m.record(send, name+" http send", trace.SpanKindInternal, truthRollout)
	}
	_, _ = w.Write(out)
	if send != nil {
		send.End()
		// The last body message (more_body false): Gym's servers send two.
		_, send = s.m.asgi.Start(ctx, name+" http send", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("asgi.event.type", "http.response.body")))
		s.m.record(send, name+" http send", trace.SpanKindInternal, truthRollout)
		send.End()
	}
}
