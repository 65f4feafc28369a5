// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A job span is in no rollout. With the split on it waits settle, then
// until nothing else of its trace is held (at most wait), so that it leaves
// after the roots cut from it; with the split off it leaves at once.
func TestJobSpanWaitsForItsTrace(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run",
		span{id: "job", trace: "t", job: true},
		span{id: "held", trace: "t"}, // a root with nothing below: waits wait
	)
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("job"), "its trace still holds a span")
	o.tick(30*sec, false)
	assert.Equal(t, "-", o.rollout("held"))
	assert.Equal(t, "-", o.rollout("job"), "the trace is drained")
	assert.True(t, o.leftBy["job"].Job)

	o = newRecorder(testConfig())
	o.arrive(0, "run", span{id: "job", trace: "t", job: true}, span{id: "root", parent: "job", trace: "t"}, span{id: "r", parent: "root", trace: "t", evidence: "1-0"})
	o.tick(5*sec, false)
	assert.Equal(t, "-", o.rollout("job"), "it leaves once the root below it was cut")
	assert.True(t, o.leftBy["root"].Cut)
	first := map[string]int{}
	for i, d := range o.left {
		first[o.names[d.Key]] = i
	}
	assert.Less(t, first["root"], first["job"], "the root leaves first")

	cfg := testConfig()
	cfg.Split = false
	o = newRecorder(cfg)
	held := o.arrive(0, "run", span{id: "job", trace: "t", job: true})
	assert.Equal(t, []bool{false}, held)
	assert.Equal(t, "-", o.rollout("job"))
}

// A settled job span whose trace still held spans leaves as soon as the
// last of them leaves, not at wait.
func TestJobSpanLeavesWhenItsTraceDrains(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", span{id: "job", trace: "t", job: true})
	o.arrive(4*sec, "run", span{id: "root", parent: "job", trace: "t"}, span{id: "r", parent: "root", trace: "t", evidence: "1-0"})
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("job"), "settled, but the root below it still waits")
	o.tick(9*sec, false)
	assert.Equal(t, "1-0", o.rollout("root"))
	assert.Equal(t, "-", o.rollout("job"), "with the last of its trace, not at wait")
}
