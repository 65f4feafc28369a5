// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Command gymsim is a load generator that behaves like a NeMo Gym run (design
// §7): an orchestrator process re-executes itself as the agent, model and
// resources servers, each with its own TracerProvider, Gym's resource
// attributes and span names, talking HTTP on loopback with traceparent
// injected by CLIENT spans, and exporting OTLP to a collector. It writes
// Gym-like capture files and a truth file (every span id with the rollout it
// belongs to) for tests, and prints the spans/s it sustained.
//
//	gymsim --rollouts 1000 --concurrency 32 --preset per_rollout \
//	    --endpoint 127.0.0.1:4317 --blocking --capture-dir /tmp/cap --truth /tmp/truth.jsonl
package main

import (
	"errors"
	"flag"
	"os"
	"runtime/debug"
)

func main() {
	// A load generator trades memory for CPU: fewer collections, more spans/s.
	debug.SetGCPercent(400)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	c, err := parseConfig(args, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		os.Stderr.WriteString("gymsim: " + err.Error() + "\n")
		return 2
	}
	if c.role == roleOrchestrator {
		return runOrchestrator(c, args, os.Stdout, os.Stderr)
	}
	return runServer(c, os.Stdin, os.Stdout, os.Stderr)
}
