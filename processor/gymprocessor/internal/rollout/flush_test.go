// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
)

// Spans falling due together are taken earlier attempts first
// (Config.AttemptOrder), whatever their arrival order, so a retry's root is
// decided after its previous attempt's.
func TestFlushTakesEarlierAttemptsFirst(t *testing.T) {
	cfg := testConfig()
	cfg.AttemptOrder = split.AttemptIndex
	o := newRecorder(cfg)
	var order []string
	o.rooted = func(n *Node, _ *Run, _ bool) bool {
		order = append(order, n.Rollout())
		return false
	}
	o.arrive(0, "run",
		span{id: "a2", trace: "t2"}, span{id: "a2r", parent: "a2", trace: "t2", evidence: "12-3-a2"},
		span{id: "a1", trace: "t1"}, span{id: "a1r", parent: "a1", trace: "t1", evidence: "12-3-a1"},
		span{id: "a0", trace: "t0"}, span{id: "a0r", parent: "a0", trace: "t0", evidence: "12-3"},
	)
	o.tick(5*sec, false)
	assert.Equal(t, []string{"12-3", "12-3-a1", "12-3-a2"}, order)
}

// Shutdown takes every decision as if every deadline had passed, and
// everything leaves.
func TestFlushAtShutdown(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", shutdownSpans()...)
	o.tick(sec, true)
	assert.Zero(t, o.c.Pending())
	assert.Equal(t, "1-0", o.rollout("root"), "upward candidates settle")
	assert.True(t, o.leftBy["root"].Cut)
	assert.Equal(t, "-", o.rollout("orphan"))
	assert.Equal(t, int64(1), o.c.TakeCounts().Released[ReasonShutdown])
	assert.Equal(t, "-", o.rollout("job"), "job spans last")
}
