// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// synthesize builds a Gym-shaped run with the default preset's spans
// (docs/design.md §7) when gymsim is not available: one
// trace rooted at the orchestrator's gym.job, and per rollout what
// gymtest.Rollout draws with two model calls and one resources call (the
// orchestrator's CLIENT "HTTP POST" to /run, the agent's SERVER "POST /run"
// with its ASGI spans, gym.rollout with nemo.gym.rollout.id, and per call a
// CLIENT "HTTP POST" to /ng-rollout/<id>/... and the callee's SERVER "POST"
// with its ASGI spans), each rollout 10ms after the one before. Each
// process's spans come in requests of at most 512, as the SDK's batch span
// processor sends them: the model and resources servers' first, the
// orchestrator's (with gym.job) last.
func synthesize(rollouts int) []ptrace.Traces { return synthesizeRun(rollouts, 2) }

// shortRun is the input of issue #29's table: many short rollouts of about
// 20 spans each (four model calls and one resources call), in the same
// 512-span requests per process.
func shortRun(rollouts int) []ptrace.Traces { return synthesizeRun(rollouts, 4) }

func synthesizeRun(rollouts, modelCalls int) []ptrace.Traces {
	job := gymtest.Job("job")
	job.End = int64(rollouts)*10 + 1000
	spans := []gymtest.Span{job}
	for i := 0; i < rollouts; i++ {
		spans = append(spans, gymtest.Rollout(fmt.Sprintf("%d-%d", i/4, i%4), gymtest.RolloutOptions{
			Observability: true, DispatchParent: "job", Trace: "job", ModelCalls: modelCalls, Offset: int64(i) * 10,
		})...)
	}
	procs := gymtest.Processes()
	var out []ptrace.Traces
	for _, p := range []string{"model", "resources", "agent", "orchestrator"} {
		var mine []gymtest.Span
		for _, s := range spans {
			if s.Proc == p {
				mine = append(mine, s)
			}
		}
		for len(mine) > 0 {
			n := min(len(mine), 512)
			out = append(out, gymtest.Build(procs, []string{p}, mine[:n]))
			mine = mine[n:]
		}
	}
	return out
}
