// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package instrument is `otelcol-gym instrument -- <command> [args...]`
// (design §6): like opentelemetry-instrument, it runs a command so that
// every NeMo Gym process the command starts (the gym CLI and each server's
// app.py; not Ray's processes) sends its spans to the collector over
// OTLP/HTTP, one service.name per Gym server, W3C trace context on, with the
// richest telemetry the command's Python can give: Gym's own telemetry
// through the installed nemo-lens where it has what Gym imports; through
// otelcol-gym's nemo-lens bridge where the installed nemo-lens lacks it (0.1.0,
// the one on the package index); else OpenTelemetry's generic FastAPI, ASGI
// and aiohttp-client instrumentation.
//
// Flow:
//
//	RunCommand → parseOptions → planRun (the capture dir; Gym's --output; the ++ overrides a gym/ng_* command lacks)
//	  → collectorFor: a collector answers at --endpoint → used; nothing listens → startCollector (this binary on
//	    the embedded default, a process group of its own, log in the capture dir); anything else → error, no command
//	  → private dir (writePythonFiles; startCleanup removes it when instrument ends)
//	  → chooseFor: pythonOf(command) (its shebang) → probe (python -B otelcol_gym_probe.py → choice JSON) → one line on stderr
//	  → settings.environ (PYTHONPATH first: our sitecustomize; OTEL_*; NEMO_GYM_OTEL_RUN_ID)
//	  → no collector started: execve(command): the command keeps this pid, its stdio, its signals and its exit status
//	  → one started: superviseCommand: the command as a child in this process group; when it ends, drain
//	    (SIGTERM, wait: every accepted span written), the run summary (rollouts.jsonl's new lines), its exit
//
// In every Python process of the command, python/sitecustomize.py asks
// choice.py the same question for that process's own Python (a Gym server
// may run from a venv of its own) and applies the answer; only a Gym process
// is touched. --export prints the settings as shell lines instead.
//
// Files: command.go (flags, the flow), gymargs.go (what Gym's command line
// says), owncollector.go (the collector instrument starts and drains),
// supervise.go (the command as a child, signals, exit), summary.go (the run
// summary), interpreter.go (a program's Python from its shebang), probe.go,
// environment.go (the variables, export lines), export.go, collector.go
// (does a collector answer), cleanup.go (the private dir's removal),
// files.go (the embedded Python side: python/ and bridge/).
//
// What it writes: the private dir under $TMPDIR; with a collector of its
// own, the capture dir (the collector's files and its log,
// otelcol-gym.log); the probe runs with -B, so not even bytecode lands in
// the user's venv.
package instrument // import "github.com/otelcol-gym/otelcol-gym/internal/instrument"
