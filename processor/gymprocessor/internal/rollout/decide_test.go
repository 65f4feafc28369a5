// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A span with its own evidence leaves at once, directly; a span below it
// downward. Direct evidence wins over an ancestor's rollout (a leaked
// asyncio context), and the span's descendants follow it.
func TestDirectEvidenceWins(t *testing.T) {
	o := newRecorder(testConfig())
	held := o.arrive(0, "run",
		span{id: "rollout-a", trace: "t", evidence: "9-0"},
		span{id: "call-b", parent: "rollout-a", trace: "t", evidence: "9-1"},
		span{id: "server-b", parent: "call-b", trace: "t"},
	)
	assert.Equal(t, []bool{false, false, false}, held, "nothing waits")
	assert.Equal(t, "9-0", o.rollout("rollout-a"))
	assert.Equal(t, "9-1", o.rollout("call-b"))
	assert.Equal(t, HowDirect, o.leftBy["call-b"].How)
	assert.Equal(t, "9-1", o.rollout("server-b"), "below the direct span, not its ancestor")
	assert.Equal(t, HowDownward, o.leftBy["server-b"].How)
	k := o.c.TakeCounts()
	assert.Equal(t, [3]int64{2, 1, 0}, k.Promoted)
	assert.Equal(t, int64(3), k.Received)
}

// A part may hold a span decided directly or downward (Owner.Decided ->
// Core.Hold) and let it go (Release); one it holds and does not release
// leaves at its deadline with GaveUp.
func TestPartsHoldDecidedSpans(t *testing.T) {
	o := newRecorder(testConfig())
	var waiting *Node
	o.decided = func(n *Node) bool {
		switch o.names[n.Key()] {
		case "peer":
			require.True(t, o.c.Hold(n, HoldPeer))
			waiting = n
			return true
		case "synth":
			return o.c.Hold(n, HoldRolloutParent)
		}
		return false
	}
	held := o.arrive(0, "run", span{id: "peer", trace: "t", evidence: "1-0"}, span{id: "synth", trace: "u", evidence: "1-0"})
	assert.Equal(t, []bool{true, true}, held)
	ph, ok := waiting.Held()
	require.True(t, ok)
	assert.Equal(t, HoldPeer, ph)
	o.c.Begin(sec)
	o.c.Release(waiting)
	o.c.End()
	d := o.leftBy["peer"]
	assert.Equal(t, "1-0", d.Rollout)
	assert.Equal(t, HoldPeer, d.Phase)
	assert.False(t, d.GaveUp, "released: what it waited for came")
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("synth"), "it waits rollout_wait, not settle")
	o.tick(2*3600*sec, false)
	d = o.leftBy["synth"]
	assert.Equal(t, "1-0", d.Rollout)
	assert.True(t, d.GaveUp, "its deadline passed")
	assert.Zero(t, o.c.Pending())
}

// A part's hold of a held span for its peer takes its settle from the
// span's arrival: once that passed, the span is not held again.
func TestHoldPeerAfterItsWaitIsRefused(t *testing.T) {
	o := newRecorder(testConfig())
	var child *Node
	o.decided = func(n *Node) bool {
		if o.names[n.Key()] == "child" {
			child = n
			return o.c.Hold(n, HoldPeer)
		}
		return false
	}
	o.arrive(0, "run", span{id: "child", parent: "p", trace: "t"})
	o.arrive(6*sec, "run", span{id: "p", trace: "t", evidence: "1-0"})
	require.NotNil(t, child, "decided downward when its parent came")
	assert.Equal(t, "1-0", o.rollout("child"), "settle after its arrival has passed: it left")
	assert.Zero(t, o.c.Pending())
}
