// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The variables the Python side reads (otelcol_gym_instrument/choice.py).
const (
	requestedEnv = "OTELCOL_GYM_TELEMETRY" // --telemetry: auto, gym or generic
	announcedEnv = "OTELCOL_GYM_ANNOUNCED" // the choice this command printed for the command's Python
)

// settings are what `otelcol-gym instrument` gives every process of the
// command.
type settings struct {
	endpoint    string // OTLP/HTTP base URL
	telemetry   string // requested: auto, gym, generic
	serviceName string // the group: each process is <serviceName>/<what it is>
	runID       string // "" lets Gym's own telemetry mint one
	pythonDir   string // the directory that goes first on PYTHONPATH
	announced   string // the probe's choice for the command's Python ("" when not probed)
}

// assignment is one variable the command gets: set to value, or removed.
type assignment struct {
	name, value string
	unset       bool
}

// assignments are the settings as environment variables. The OTLP
// per-signal endpoint and protocol variables are removed: they would send a
// signal elsewhere than --endpoint says.
func (s settings) assignments(pythonPath string) []assignment {
	as := []assignment{
		{name: "PYTHONPATH", value: joinPath(s.pythonDir, pythonPath)},
		{name: requestedEnv, value: s.telemetry},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: s.endpoint},
		{name: "OTEL_EXPORTER_OTLP_PROTOCOL", value: "http/protobuf"},
		{name: "OTEL_PROPAGATORS", value: "tracecontext,baggage"},
		{name: "OTEL_SERVICE_NAME", value: s.serviceName},
		{name: announcedEnv, value: s.announced},
	}
	if s.runID != "" {
		as = append(as, assignment{name: "NEMO_GYM_OTEL_RUN_ID", value: s.runID})
	}
	for _, signal := range []string{"TRACES", "METRICS", "LOGS"} {
		for _, what := range []string{"ENDPOINT", "PROTOCOL"} {
			as = append(as, assignment{name: "OTEL_EXPORTER_OTLP_" + signal + "_" + what, unset: true})
		}
	}
	return as
}

func joinPath(first, rest string) string {
	if rest == "" {
		return first
	}
	return first + string(filepath.ListSeparator) + rest
}

// environ is base (KEY=value lines) with the settings applied.
func (s settings) environ(base []string) []string {
	as := s.assignments(lookup(base, "PYTHONPATH"))
	out := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == cleanupEnv || slices.ContainsFunc(as, func(a assignment) bool { return a.name == name })
	})
	for _, a := range as {
		if !a.unset {
			out = append(out, a.name+"="+a.value)
		}
	}
	return out
}

// exports are the settings as lines for a POSIX shell (`eval "$(otelcol-gym
// instrument --export)"`); PYTHONPATH keeps what the shell has.
func (s settings) exports() string {
	var b strings.Builder
	for _, a := range s.assignments("") {
		switch {
		case a.unset:
			fmt.Fprintf(&b, "unset %s\n", a.name)
		case a.name == "PYTHONPATH":
			fmt.Fprintf(&b, "export PYTHONPATH=%s\"${PYTHONPATH:+%c$PYTHONPATH}\"\n", shellQuote(a.value), filepath.ListSeparator)
		default:
			fmt.Fprintf(&b, "export %s=%s\n", a.name, shellQuote(a.value))
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell: single quotes, each ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lookup is the value of name in env (KEY=value lines); the last one wins,
// as for exec.
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
