// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run that shows, before any evidence, that Gym's observability is off
// releases what it holds at once (reason observability_off) and its later
// spans pass through; evidence appearing later ends the pass-through for
// the spans after it. Another run is not touched.
func TestObservabilityOffPassesTheRunThrough(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "other", span{id: "other-held", trace: "o"})
	o.arrive(0, "run", span{id: "held", trace: "t"})
	require.Equal(t, 2, o.c.Pending())
	o.c.Begin(sec)
	r := o.c.Run("run", "svc", false)
	f := o.facts(span{id: "sign", trace: "t"})
	f.ObservabilityOff = true
	o.cur = "sign"
	assert.False(t, o.c.Arrive(&f, r), "it passes through")
	o.c.End()
	assert.Equal(t, "-", o.rollout("held"))
	assert.True(t, o.leftBy["sign"].PassedThrough)
	assert.Equal(t, 1, o.c.Pending(), "the other run's span still waits")
	held := o.arrive(2*sec, "run", span{id: "later", parent: "absent", trace: "t"})
	assert.Equal(t, []bool{false}, held)
	assert.True(t, o.leftBy["later"].PassedThrough)
	o.arrive(3*sec, "run", span{id: "evidence", trace: "t2", evidence: "1-0"})
	held = o.arrive(4*sec, "run", span{id: "after", parent: "absent2", trace: "t2"})
	assert.Equal(t, []bool{true}, held, "a mixed run: decided normally again")
	k := o.c.TakeCounts()
	assert.Equal(t, int64(1), k.Released[ReasonObservabilityOff])
	assert.Equal(t, int64(2), k.Passed)
	assert.Equal(t, int64(1), k.Problems[ProblemObservabilityOff])
	assert.Equal(t, []string{"run"}, k.ProblemRuns[ProblemObservabilityOff])
}

// wait after a run's first span, a run with neither evidence nor a sign
// is reported once (no_rollout_evidence), as is one that sent only
// orchestrator spans; nothing else changes for them.
func TestRunDiagnostics(t *testing.T) {
	o := newRecorder(testConfig())
	o.c.Begin(0)
	r := o.c.Run("quiet", "nemo-gym/orchestrator", true)
	f := o.facts(span{id: "s", trace: "t"})
	o.cur = "s"
	o.c.Arrive(&f, r)
	o.c.End()
	o.tick(30*sec-1, false)
	assert.Zero(t, o.c.TakeCounts().Problems)
	o.tick(30*sec, false)
	k := o.c.TakeCounts()
	assert.Equal(t, int64(1), k.Problems[ProblemNoEvidence])
	assert.Equal(t, int64(1), k.Problems[ProblemOnlyOrchestrator])
	assert.Equal(t, []string{"quiet"}, k.ProblemRuns[ProblemNoEvidence])
	o.tick(60*sec, false)
	assert.Zero(t, o.c.TakeCounts().Problems, "once")
	assert.Equal(t, "-", o.rollout("s"), "its span left by the structural rules (a root: wait)")
}
