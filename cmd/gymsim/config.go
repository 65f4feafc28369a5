// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// config is everything gymsim is told on its command line. The orchestrator
// passes its own arguments on to the servers it starts, followed by the few
// flags that only a server needs (later flags win).
type config struct {
	// Load.
	rollouts        int
	repeats         int
	concurrency     int
	rate            float64
	rolloutDuration time.Duration
	coldStart       time.Duration
	modelCalls      int
	toolCalls       int
	errorRate       float64
	retryRate       float64
	seed            int64

	// Gym's telemetry settings.
	preset        string
	spanGroups    string
	observability bool
	telemetry     bool
	runID         string
	serviceGroup  string
	semconv       string

	// Export.
	endpoint   string
	protocol   string
	blocking   bool
	batchDelay time.Duration
	queueSize  int

	// Outputs.
	captureDir string
	truth      string

	// Set by the orchestrator for the servers it starts.
	role          string
	agentName     string
	modelName     string
	modelUpstream string
	resourcesName string
	modelAddr     string
	resourcesAddr string

	groups groupSet // resolved from preset and spanGroups
}

func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("gymsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.rollouts, "rollouts", 50, "rollouts to run (re-dispatched attempts come on top)")
	fs.IntVar(&c.repeats, "repeats", 4, "rollouts per task: rollout i is <i/repeats>-<i%repeats>")
	fs.IntVar(&c.concurrency, "concurrency", 8, "rollouts in flight at once")
	fs.Float64Var(&c.rate, "rate", 0, "rollouts started per second (0: as fast as concurrency allows)")
	fs.DurationVar(&c.rolloutDuration, "rollout-duration", 0, "how long one rollout lasts (spent in the model calls)")
	fs.DurationVar(&c.coldStart, "cold-start", 0, "the model server answers nothing before this long after its first request (a cold or loaded vLLM server: the first wave's model calls, hence the run's first rollout evidence, all end after it)")
	fs.IntVar(&c.modelCalls, "model-calls", 2, "model calls per rollout")
	fs.IntVar(&c.toolCalls, "tool-calls", 1, "resources-server tool calls per rollout")
	fs.Float64Var(&c.errorRate, "error-rate", 0.02, "fraction of model calls that fail with HTTP 500")
	fs.Float64Var(&c.retryRate, "retry-rate", 0.04, "fraction of rollouts whose first attempt fails and is re-dispatched as -a1")
	fs.Int64Var(&c.seed, "seed", 1, "seed of the error and retry choices")
	fs.StringVar(&c.preset, "preset", "default", "Gym span-group preset: default, per_rollout or all")
	fs.StringVar(&c.spanGroups, "span-groups", "", "Gym span_groups spec overriding --preset: comma list of presets and groups; -name removes a group (e.g. default,-http_client)")
	fs.BoolVar(&c.observability, "observability", true, "Gym's observability_enabled: rollout ids, /ng-rollout/ prefixes and capture files")
	fs.BoolVar(&c.telemetry, "telemetry", true, "Gym's telemetry: false exports no span, as Gym does when its telemetry silently switches off (nemo-gym from the package index); capture files are still written")
	fs.StringVar(&c.runID, "run-id", "", "nemo.run.id shared by every process (default: 12 random hex digits)")
	fs.StringVar(&c.serviceGroup, "service-group", "nemo-gym", "service.name prefix (Gym's telemetry.service_name)")
	fs.StringVar(&c.semconv, "server-semconv", "old", "HTTP semconv of SERVER spans: old (http.target, what opentelemetry-instrumentation-fastapi 0.66b1 emits for every Gym server), new (url.path, otelhttp) or mixed (model and agent new, resources old)")
	fs.StringVar(&c.endpoint, "endpoint", "", "OTLP endpoint host:port or URL (default 127.0.0.1:4317 for grpc, 127.0.0.1:4318 for http)")
	fs.StringVar(&c.protocol, "protocol", "grpc", "OTLP protocol: grpc or http (http/protobuf)")
	fs.BoolVar(&c.blocking, "blocking", false, "the batch span processor waits for queue room instead of dropping spans")
	fs.DurationVar(&c.batchDelay, "batch-delay", 5*time.Second, "batch span processor schedule delay (the SDK default is 5s)")
	fs.IntVar(&c.queueSize, "queue-size", 0, "batch span processor queue size (default 2048, or 65536 with --blocking)")
	fs.StringVar(&c.captureDir, "capture-dir", "", "write Gym-like <rollout_id>.capture.jsonl files here")
	fs.StringVar(&c.truth, "truth", "", "write every span id with the rollout it belongs to here (JSON lines)")
	fs.StringVar(&c.role, "role", roleOrchestrator, "internal: the process role (orchestrator, agent, model, resources)")
	fs.StringVar(&c.agentName, "agent-name", "example_single_tool_call_simple_agent", "the agent server's Gym config name")
	fs.StringVar(&c.modelName, "model-name", "policy_model", "the model server's Gym config name")
	fs.StringVar(&c.modelUpstream, "model-upstream", "http://127.0.0.1:8000/v1", "the base URL of the LLM the model server's (simulated) upstream calls name in url.full")
	fs.StringVar(&c.resourcesName, "resources-name", "example_single_tool_call", "the resources server's Gym config name")
	fs.StringVar(&c.modelAddr, "model-addr", "", "internal: host:port of the model server")
	fs.StringVar(&c.resourcesAddr, "resources-addr", "", "internal: host:port of the resources server")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.validate()
}

func (c *config) validate() error {
	var errs []error
	if c.rollouts < 0 {
		errs = append(errs, fmt.Errorf("--rollouts: must not be negative, got %d", c.rollouts))
	}
	if c.repeats <= 0 {
		errs = append(errs, fmt.Errorf("--repeats: must be positive, got %d", c.repeats))
	}
	if c.concurrency <= 0 {
		errs = append(errs, fmt.Errorf("--concurrency: must be positive, got %d", c.concurrency))
	}
	if c.rate < 0 {
		errs = append(errs, fmt.Errorf("--rate: must not be negative, got %v", c.rate))
	}
	if c.rolloutDuration < 0 {
		errs = append(errs, fmt.Errorf("--rollout-duration: must not be negative, got %v", c.rolloutDuration))
	}
	if c.coldStart < 0 {
		errs = append(errs, fmt.Errorf("--cold-start: must not be negative, got %v", c.coldStart))
	}
	if c.modelCalls < 1 {
		errs = append(errs, fmt.Errorf("--model-calls: must be at least 1, got %d", c.modelCalls))
	}
	if c.toolCalls < 0 {
		errs = append(errs, fmt.Errorf("--tool-calls: must not be negative, got %d", c.toolCalls))
	}
	for name, v := range map[string]float64{"--error-rate": c.errorRate, "--retry-rate": c.retryRate} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s: must be in [0, 1], got %v", name, v))
		}
	}
	switch c.protocol {
	case "grpc", "http", "http/protobuf":
	default:
		errs = append(errs, fmt.Errorf("--protocol: %q is not grpc or http", c.protocol))
	}
	switch c.semconv {
	case "new", "old", "mixed":
	default:
		errs = append(errs, fmt.Errorf("--server-semconv: %q is not new, old or mixed", c.semconv))
	}
	if c.batchDelay <= 0 {
		errs = append(errs, fmt.Errorf("--batch-delay: must be positive, got %v", c.batchDelay))
	}
	if c.queueSize < 0 {
		errs = append(errs, fmt.Errorf("--queue-size: must not be negative, got %d", c.queueSize))
	}
	if _, ok := roles[c.role]; !ok {
		errs = append(errs, fmt.Errorf("--role: unknown role %q", c.role))
	}
	if c.runID != "" && !validRolloutID(c.runID) {
		errs = append(errs, fmt.Errorf("--run-id: %q must match %s", c.runID, rolloutIDPattern))
	}
	spec := c.spanGroups
	if strings.TrimSpace(spec) == "" {
		spec = c.preset
	}
	groups, err := parseSpanGroups(spec)
	if err != nil {
		name := "--span-groups"
		if strings.TrimSpace(c.spanGroups) == "" {
			name = "--preset"
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	c.groups = groups
	return errors.Join(errs...)
}

// serverSemconv says whether the SERVER spans of a role use the stable HTTP
// semantic conventions (url.path) or the old ones (http.target).
func (c *config) serverSemconv(role string) string {
	if c.semconv != "mixed" {
		return c.semconv
	}
	if role == roleResources {
		return "old"
	}
	return "new"
}
