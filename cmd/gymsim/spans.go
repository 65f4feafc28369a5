// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Gym's span groups (nemo_gym/telemetry/span_groups.py plus the lens groups it
// inherits). Only the ones gymsim emits spans for change its output.
const (
	groupJob         = "job"
	groupServer      = "server"
	groupHTTPClient  = "http_client"
	groupRollout     = "rollout"
	groupVerify      = "verify"
	groupAgent       = "agent"
	groupModelCall   = "model_call"
	groupSandbox     = "sandbox"
	groupToolCall    = "tool_call"
	groupConcurrency = "concurrency"
)

var knownGroups = []string{
	groupJob, groupServer, groupHTTPClient, groupRollout, groupVerify, groupAgent,
	groupModelCall, groupSandbox, groupToolCall, groupConcurrency,
	// nemo-lens groups Gym inherits but never emits.
	"checkpoint", "evaluate", "model_init", "load_checkpoint", "step", "forward_backward", "optimizer",
}

// presets as Gym defines them: default is job plus the cross-process spine,
// per_rollout drops job and adds the per-rollout groups, all is everything.
var presets = map[string][]string{
	"default":     {groupJob, groupServer, groupHTTPClient, groupRollout},
	"per_rollout": {groupVerify, groupAgent, groupModelCall, groupConcurrency, groupServer, groupHTTPClient, groupRollout},
	"all":         knownGroups,
}

// groupSet is the set of enabled span groups.
type groupSet map[string]bool

// parseSpanGroups reads a Gym span_groups spec: a comma list of presets and
// group names, case-insensitive; unknown names are an error. As an extension
// for tests, "-name" removes a group (or a preset's groups) again, so
// "default,-http_client" is the default preset without CLIENT spans.
func parseSpanGroups(spec string) (groupSet, error) {
	known := map[string]bool{}
	for _, g := range knownGroups {
		known[g] = true
	}
	set := groupSet{}
	var errs []error
	for _, item := range strings.Split(spec, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		remove := strings.HasPrefix(item, "-")
		name := strings.TrimPrefix(item, "-")
		var names []string
		switch {
		case presets[name] != nil:
			names = presets[name]
		case known[name]:
			names = []string{name}
		default:
			errs = append(errs, fmt.Errorf("unknown span group or preset %q", name))
			continue
		}
		for _, n := range names {
			if remove {
				delete(set, n)
			} else {
				set[n] = true
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

func (s groupSet) String() string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// Instrumentation scopes, as Gym's spans carry them.
const (
	scopeManaged = "nemo.lens.helpers" // managed_span
	scopeClient  = "nemo.gym"          // client_span in server_utils
	// SERVER spans with the old semconv and their http send / http receive
	// children: the FastAPI instrumentor hands its own tracer to the ASGI
	// middleware (opentelemetry-instrumentation-fastapi 0.66b1, as under
	// nemo-gym 0.7.0).
	scopeFastAPI   = "opentelemetry.instrumentation.fastapi"
	fastAPIVersion = "0.66b1"
)

// rolloutKey holds the current rollout id, Gym's current_rollout_id() ContextVar.
type rolloutKey struct{}

func withRollout(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, rolloutKey{}, id)
}

func currentRollout(ctx context.Context) string {
	id, _ := ctx.Value(rolloutKey{}).(string)
	return id
}

// spanMaker creates a process's spans the way Gym does and records each one
// in the truth as it is created.
type spanMaker struct {
	groups        groupSet
	observability bool
	service       string
	managed       trace.Tracer
	client        trace.Tracer
	asgi          trace.Tracer
	fastapi       trace.Tracer
	prop          propagation.TextMapPropagator
	truth         *truthWriter
}

func newSpanMaker(c *config, tp trace.TracerProvider, truth *truthWriter) *spanMaker {
	return &spanMaker{
		groups:        c.groups,
		observability: c.observability,
		service:       c.serviceName(c.role),
		managed:       tp.Tracer(scopeManaged, trace.WithInstrumentationVersion(lensVersion)),
		client:        tp.Tracer(scopeClient, trace.WithInstrumentationVersion(gymVersion)),
		asgi:          tp.Tracer(scopeFastAPI, trace.WithInstrumentationVersion(fastAPIVersion)),
		fastapi:       tp.Tracer(scopeFastAPI, trace.WithInstrumentationVersion(fastAPIVersion)),
		prop:          propagation.TraceContext{},
		truth:         truth,
	}
}

// record writes a started span to the truth with the rollout it belongs to
// (design §4.2), which is not always the rollout id it carries.
func (m *spanMaker) record(span trace.Span, name string, kind trace.SpanKind, rollout string) {
	sc := span.SpanContext()
	if !sc.IsValid() || !sc.IsSampled() {
		return
	}
	m.truth.record(sc, m.service, name, kind, rollout)
}

// startManaged starts an INTERNAL span of a group, as nemo-lens managed_span
// does; with the group off it returns ctx and a nil span.
func (m *spanMaker) startManaged(ctx context.Context, group, name, rollout string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !m.groups[group] {
		return ctx, nil
	}
	ctx, span := m.managed.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	m.record(span, name, trace.SpanKindInternal, rollout)
	return ctx, span
}

// endSpan ends span (nil for a disabled group) with err recorded as Gym's
// helpers record an exception: an exception event and status ERROR.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		recordException(span, err)
	}
	span.End()
}

// recordException adds the event Python's Span.record_exception adds and sets
// the status its helpers set ("<type>: <message>").
func recordException(span trace.Span, err error) {
	typ, msg := fmt.Sprintf("%T", err), err.Error()
	var se *simError
	if errors.As(err, &se) {
		typ, msg = se.typ, se.msg
	}
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", typ),
		attribute.String("exception.message", msg),
		attribute.String("exception.stacktrace", "Traceback (most recent call last):\n  File \"gymsim\", line 1, in <module>\n"+typ+": "+msg+"\n"),
		attribute.Bool("exception.escaped", false),
	))
	span.SetStatus(codes.Error, typ+": "+msg)
}

// simError is an exception as Python would name it.
type simError struct {
	typ, msg string
}

func (e *simError) Error() string { return e.typ + ": " + e.msg }
