// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config // import "github.com/otelcol-gym/otelcol-gym/config"

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Forwarding with one variable (design §6). Gym's processes read
// OTEL_EXPORTER_OTLP_ENDPOINT and point it at this collector, so the
// collector's own destination needs a name of its own: the same convention
// under the distribution's prefix. When it is set, the embedded default
// gets an overlay, a second --config after Standalone, that sends every
// pipeline of a forwarded signal also to a forwarding pipeline of that
// signal through the gymforward connector, which never returns the
// forwarding exporter's refusal (a backend that is down costs forwarded
// data only, never the capture dir); unset, the command line, and so the
// effective configuration, is what it was.
const (
	// ForwardEndpointEnv is the OTLP/HTTP base URL (the signal paths
	// /v1/traces, /v1/metrics, /v1/logs are appended), as
	// OTEL_EXPORTER_OTLP_ENDPOINT is for an SDK.
	ForwardEndpointEnv = "OTELCOL_GYM_EXPORTER_OTLP_ENDPOINT"
	// ForwardTracesEndpointEnv, ForwardMetricsEndpointEnv and
	// ForwardLogsEndpointEnv are one signal's full URL, as
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is: set alone, only that signal is
	// forwarded (Phoenix, Langfuse and Jaeger take traces only); beside
	// ForwardEndpointEnv, they replace its URL for their signal.
	ForwardTracesEndpointEnv  = "OTELCOL_GYM_EXPORTER_OTLP_TRACES_ENDPOINT"
	ForwardMetricsEndpointEnv = "OTELCOL_GYM_EXPORTER_OTLP_METRICS_ENDPOINT"
	ForwardLogsEndpointEnv    = "OTELCOL_GYM_EXPORTER_OTLP_LOGS_ENDPOINT"
	// ForwardHeadersEnv are the headers sent with every export, as
	// OTEL_EXPORTER_OTLP_HEADERS: key=value pairs separated by commas, the
	// values percent-encoded (e.g. Authorization=Basic%20...).
	ForwardHeadersEnv = "OTELCOL_GYM_EXPORTER_OTLP_HEADERS"
	// ForwardBackendEnv names the kind of backend the traces go to, for
	// Gym's scores (the gymscores extension): phoenix (annotations), mlflow
	// (assessments), or none. Unset, it is mlflow when the headers carry
	// MLflow's x-mlflow-experiment-id, else none: Phoenix takes plain OTLP
	// and cannot be told from any other backend by its URL.
	ForwardBackendEnv = "OTELCOL_GYM_EXPORTER_BACKEND"
	// ScoresExtension is the extension the overlay adds when the backend
	// takes scores.
	ScoresExtension = "gymscores"
	// forwardScoresEnv passes the backend's base URL, the traces URL
	// without /v1/traces, to gymscores.
	forwardScoresEnv = "OTELCOL_GYM_EXPORTER_SCORES_ENDPOINT"
	// forwardHeaderEnv is the variable each header's value is passed in
	// (the overlay is on the command line; a header may be a secret).
	forwardHeaderEnv = "OTELCOL_GYM_EXPORTER_OTLP_HEADER_"

	// ForwardExporter is the exporter the overlay adds, the one exporter of
	// each forwarding pipeline (<signal>/forward).
	ForwardExporter = "otlp_http/forward"
	// ForwardConnector is the connector type that hands each pipeline's
	// data to its signal's forwarding pipeline (gymforward/<signal>).
	ForwardConnector = "gymforward"
)

// forwardExporter is the exporter's configuration: retry with backoff for
// up to 5 minutes of a backend's outage, and an in-memory queue bounded in
// bytes; what it refuses when the queue is full, the connector drops from
// forwarding (counted and logged), so a slow or absent backend never holds
// up the pipelines that write the capture dir.
const forwardExporter = `
retry_on_failure:
  enabled: true
  initial_interval: 1s
  max_interval: 30s
  max_elapsed_time: 5m
sending_queue:
  enabled: true
  sizer: bytes
  queue_size: 134217728
  num_consumers: 4
`

// headerKey is a header name as HTTP allows it.
var headerKey = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// forwardSignals are the signals forwarded, each with its own variable, the
// exporter's key for its URL and the path the exporter appends to
// ForwardEndpointEnv's.
var forwardSignals = []struct{ signal, env, key, path string }{
	{"traces", ForwardTracesEndpointEnv, "traces_endpoint", "/v1/traces"},
	{"metrics", ForwardMetricsEndpointEnv, "metrics_endpoint", "/v1/metrics"},
	{"logs", ForwardLogsEndpointEnv, "logs_endpoint", "/v1/logs"},
}

// ForwardingOverlay is the overlay that makes standalone (a configuration
// with service.pipelines) send each pipeline's data to the endpoint the
// variables lookup finds give its signal (ForwardEndpointEnv for every
// signal, a signal's own variable for it), and the variables (name → value)
// its headers are read from (ForwardHeadersEnv). Each pipeline of a
// forwarded signal gets the connector gymforward/<signal> after its own
// exporters, the receiver of the pipeline <signal>/forward, whose exporter
// is ForwardExporter. Pipelines of a signal without an endpoint are left as
// they are.
func ForwardingOverlay(standalone string, lookup func(string) (string, bool)) (string, map[string]string, error) {
	var doc struct {
		Service struct {
			Extensions []string `yaml:"extensions"`
			Pipelines  map[string]struct {
				Exporters []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if err := yaml.Unmarshal([]byte(standalone), &doc); err != nil {
		return "", nil, fmt.Errorf("reading the pipelines to forward: %w", err)
	}
	var exp map[string]any
	if err := yaml.Unmarshal([]byte(forwardExporter), &exp); err != nil {
		return "", nil, err
	}
	headers, _ := lookup(ForwardHeadersEnv)
	env, err := forwardHeaders(headers, exp)
	if err != nil {
		return "", nil, err
	}
	set := func(name string) bool { v, _ := lookup(name); return v != "" }
	if set(ForwardEndpointEnv) {
		exp["endpoint"] = "${env:" + ForwardEndpointEnv + "}"
	}
	// The connector of each forwarded signal, and the URL its lines name.
	connectors := map[string]any{}
	for _, s := range forwardSignals {
		destination := "${env:" + ForwardEndpointEnv + "}" + s.path
		if set(s.env) {
			exp[s.key] = "${env:" + s.env + "}"
			destination = exp[s.key].(string)
		}
		if set(s.env) || set(ForwardEndpointEnv) {
			connectors[ForwardConnector+"/"+s.signal] = map[string]any{"destination": destination}
		}
	}
	pipelines := map[string]any{}
	for name, p := range doc.Service.Pipelines {
		signal, _, _ := strings.Cut(name, "/")
		connector := ForwardConnector + "/" + signal
		if connectors[connector] == nil {
			continue
		}
		pipelines[name] = map[string]any{"exporters": append(p.Exporters, connector)}
		pipelines[signal+"/forward"] = map[string]any{"receivers": []string{connector}, "exporters": []string{ForwardExporter}}
	}
	service := map[string]any{"pipelines": pipelines}
	overlay := map[string]any{
		"connectors": connectors,
		"exporters":  map[string]any{ForwardExporter: exp},
		"service":    service,
	}
	kind, base, err := scoresBackend(lookup, exp["headers"])
	if err != nil {
		return "", nil, err
	}
	if kind != "" && connectors[ForwardConnector+"/traces"] != nil {
		if env == nil {
			env = map[string]string{}
		}
		env[forwardScoresEnv] = base
		scores := map[string]any{"backend": kind, "endpoint": "${env:" + forwardScoresEnv + "}"}
		if h, ok := exp["headers"]; ok {
			scores["headers"] = h
		}
		overlay["extensions"] = map[string]any{ScoresExtension: scores}
		service["extensions"] = append(slices.Clone(doc.Service.Extensions), ScoresExtension)
	}
	b, err := yaml.Marshal(overlay)
	return string(b), env, err
}

// scoresBackend is the kind of backend the traces go to (ForwardBackendEnv,
// else inferred from headers, exp's) and its base URL, the traces URL
// without /v1/traces; kind "" when it takes no scores.
func scoresBackend(lookup func(string) (string, bool), headers any) (kind, base string, err error) {
	kind, _ = lookup(ForwardBackendEnv)
	kind = strings.ToLower(strings.TrimSpace(kind))
	switch kind {
	case "phoenix", "mlflow":
	case "none":
		return "", "", nil
	case "":
		hs, _ := headers.(map[string]string)
		for k := range hs {
			if strings.EqualFold(k, "x-mlflow-experiment-id") {
				kind = "mlflow"
			}
		}
		if kind == "" {
			return "", "", nil
		}
	default:
		return "", "", fmt.Errorf("%s is %q: write phoenix (annotations), mlflow (assessments) or none, the backend Gym's scores go to", ForwardBackendEnv, kind)
	}
	if u, _ := lookup(ForwardTracesEndpointEnv); u != "" {
		return kind, strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/v1/traces"), nil
	}
	u, _ := lookup(ForwardEndpointEnv)
	return kind, strings.TrimSuffix(u, "/"), nil
}

// forwardHeaders parses headers (OTEL_EXPORTER_OTLP_HEADERS's format) into
// exp's headers, each value read from a variable of its own.
func forwardHeaders(headers string, exp map[string]any) (map[string]string, error) {
	if strings.TrimSpace(headers) == "" {
		return nil, nil
	}
	env := map[string]string{}
	hs := map[string]string{}
	// A header may be a secret: an error names a pair by its place (and
	// its key once it is one), never by what it holds (design §6).
	for i, pair := range strings.Split(headers, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return nil, fmt.Errorf("%s: pair %d has no '=': write key=value pairs separated by commas (its text is not shown: it may be a secret)", ForwardHeadersEnv, i+1)
		}
		if !headerKey.MatchString(k) {
			return nil, fmt.Errorf("%s: the key of pair %d is not a header name (letters, digits and !#$%%&'*+.^_`|~- only; its text is not shown: it may be a secret)", ForwardHeadersEnv, i+1)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %s (pair %d) is not percent-encoded: write %%25 for a %% sign (the value is not shown)", ForwardHeadersEnv, k, i+1)
		}
		name := fmt.Sprintf("%s%d", forwardHeaderEnv, len(env))
		env[name] = value
		hs[k] = "${env:" + name + "}"
	}
	exp["headers"] = hs
	return env, nil
}

// withForwarding appends the forwarding overlay to args (a command line that
// runs the embedded default) when lookup finds an endpoint variable set, and
// sets the headers' variables with setenv; args as they are otherwise.
func withForwarding(args []string, standalone string, lookup func(string) (string, bool), setenv func(string, string) error) ([]string, error) {
	on := false
	for _, name := range []string{ForwardEndpointEnv, ForwardTracesEndpointEnv, ForwardMetricsEndpointEnv, ForwardLogsEndpointEnv} {
		if v, _ := lookup(name); v != "" {
			on = true
		}
	}
	if !on {
		return args, nil
	}
	overlay, env, err := ForwardingOverlay(standalone, lookup)
	if err != nil {
		return nil, err
	}
	for k, v := range env {
		if err := setenv(k, v); err != nil {
			return nil, err
		}
	}
	return append(args, "--config=yaml:"+overlay), nil
}
