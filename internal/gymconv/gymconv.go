// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymconv holds NeMo Gym's conventions that more than one component
// of otelcol-gym reads: the attribute names (with the defaults the gym
// processor and the gymspans exporter share), Gym's server types, and the
// rollout-id rule. A name or a rule is defined here once; components take
// their configurable keys' defaults from here.
package gymconv // import "github.com/otelcol-gym/otelcol-gym/internal/gymconv"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Span attributes.
const (
	// RolloutAttribute names a span's rollout. Gym sets it where its rollout
	// context is set; the gym processor sets it on every span of a rollout.
	RolloutAttribute = "nemo.gym.rollout.id"
	// SpanRunAttribute is the run id newer Gym sets on its own spans.
	SpanRunAttribute = "nemo.gym.run.id"
	// RolloutRootAttribute marks the one span the gym processor decided is
	// its rollout's root (the root of the rollout's own trace).
	RolloutRootAttribute = "nemo.gym.rollout.root"
	// OriginalTraceAttribute is the trace id (hex) a span had before the gym
	// processor gave its rollout a trace of its own; only spans of a rollout
	// carry it.
	OriginalTraceAttribute = "nemo.gym.original_trace_id"
)

// Span names Gym gives its own spans.
const (
	// RolloutSpanName is the agent's span around one rollout's /run.
	RolloutSpanName = "gym.rollout"
	// JobSpanName wraps a whole rollout-collection run.
	JobSpanName = "gym.job"
)

// Resource attributes.
const (
	// RunAttribute names a span's run (nemo-lens sets it on every process).
	RunAttribute = "nemo.run.id"
	// ServiceNameAttribute is the OpenTelemetry service name.
	ServiceNameAttribute = string(conventions.ServiceNameKey)
	// ServiceOverrideAttribute holds a process's own name behind
	// `gym eval submit`'s collector, which sets service.name to one routing
	// name for every process of a job.
	ServiceOverrideAttribute = "service.name.override"
	// RoutingServiceAttribute is where the gymspans files keep the routing
	// service.name when they show the display service as service.name.
	RoutingServiceAttribute = "service.name.routing"
	// ServerTypeAttribute is the kind of Gym server a process is; Gym sets
	// it on every server from its start.
	ServerTypeAttribute = "nemo.gym.server.type"
	// ServerNameAttribute is the Gym config name of a server (span and
	// resource attribute).
	ServerNameAttribute = "nemo.gym.server.name"
)

// Values of ServerTypeAttribute.
const (
	ServerTypeAgent        = "responses_api_agents"
	ServerTypeModel        = "responses_api_models"
	ServerTypeResources    = "resources_servers"
	ServerTypeEnvironment  = "environment_servers"
	ServerTypeOrchestrator = "orchestrator"
)

// URLPrefix is the path segment before a rollout id in Gym's URLs
// (/ng-rollout/<id>/...).
const URLPrefix = "ng-rollout"

// DefaultServiceAttributes are the resource attributes that name a span's
// service, first present wins. A new slice each call: configs own theirs.
func DefaultServiceAttributes() []string {
	return []string{ServiceOverrideAttribute, ServiceNameAttribute}
}

// Service is the service of a resource with attributes res, as every
// component names it: the value, as text, of the first of serviceAttributes
// present on it with a non-empty one; "" when none is.
func Service(res pcommon.Map, serviceAttributes []string) string {
	for _, name := range serviceAttributes {
		if v, ok := res.Get(name); ok {
			if s := v.AsString(); s != "" {
				return s
			}
		}
	}
	return ""
}

// DefaultURLAttributes are the span attributes searched, first present wins,
// for a /ng-rollout/<id>/ path: stable and old HTTP semconv, path then URL.
func DefaultURLAttributes() []string {
	return []string{string(conventions.URLPathKey), string(oldconventions.HTTPTargetKey), string(conventions.URLFullKey), string(oldconventions.HTTPURLKey)}
}

// RolloutIDPattern is Gym's own rule for a rollout id
// (maybe_rollout_id_from_run_body), as a regular expression.
const RolloutIDPattern = "[A-Za-z0-9][A-Za-z0-9._-]*"

// MaxFileIDBytes bounds an id that becomes part of a file name.
const MaxFileIDBytes = 200

// ValidRolloutID reports whether s matches RolloutIDPattern as a whole.
func ValidRolloutID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if alnum || (i > 0 && (c == '.' || c == '_' || c == '-')) {
			continue
		}
		return false
	}
	return true
}

// SafeFileID reports whether s may become part of a file name in the capture
// dir: a valid rollout id of at most MaxFileIDBytes bytes. Ids such as "..",
// "a/b", "" or ones holding NUL never pass.
func SafeFileID(s string) bool {
	return len(s) <= MaxFileIDBytes && ValidRolloutID(s)
}

// Attributes the gymcapture processor puts on a model-call span beside the
// GenAI conventions' (design §4.7).
const (
	// ModelCallIDAttribute is the capture line's model_call_id.
	ModelCallIDAttribute = "nemo.gym.model_call.id"
	// ModelCallTTFTAttribute is the capture line's latency_ttft_ms.
	ModelCallTTFTAttribute = "nemo.gym.model_call.ttft_ms"
	// ModelCallServerAttribute is the Gym model server a call went to
	// (its capture's model_ref.name), on the span gymcapture synthesizes
	// for the call.
	ModelCallServerAttribute = "nemo.gym.model_call.server"
	// SyntheticAttribute marks a span otelcol-gym synthesized (no process
	// sent it): the gym processor's service-map CLIENT spans, gymcapture's
	// chat spans.
	SyntheticAttribute = "nemo.gym.synthetic"
	// ModelRequestIDAttribute is the id newer Gym puts on its gym.model.*
	// spans: the response's own id.
	ModelRequestIDAttribute = "nemo.gym.model_request.id"
)
