// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTrackerLateSpansAndRedelivery(t *testing.T) {
	tr := NewTracker(100)
	k := Key{"run", "0-0"}
	assert.True(t, tr.Add(k, sp(2, 1, 10, 30, ModelCall)), "first span: new")
	assert.False(t, tr.Add(k, sp(3, 1, 40, 50, ToolCall)))
	root := sp(1, 0, 0, 100, AgentRun)
	got, o := tr.Finish(k, root)
	assert.Equal(t, Computed, o)
	assert.Equal(t, ms{model: 20, tools: 10, agent: 70}.split(), got)
	assert.Zero(t, tr.Held(), "the facts are let go")

	assert.False(t, tr.Add(k, sp(4, 1, 60, 70, ModelCall)), "a late span")
	assert.Equal(t, Counts{Late: 1}, tr.TakeCounts())
	again, o := tr.Finish(k, root)
	assert.Equal(t, Repeated, o, "the root delivered again")
	assert.Equal(t, got, again, "gets the split it got")
	_, o = tr.Finish(k, sp(9, 0, 0, 100, AgentRun))
	assert.Equal(t, Evicted, o, "another root of a finished rollout")
}

func TestTrackerWithhold(t *testing.T) {
	tr := NewTracker(100)
	k := Key{"run", "0-0"}
	tr.Add(k, sp(2, 1, 10, 30, ModelCall))
	tr.Withhold(k)
	tr.Add(k, sp(3, 1, 40, 50, ToolCall))
	assert.Zero(t, tr.Held())
	_, o := tr.Finish(k, sp(1, 0, 0, 100, AgentRun))
	assert.Equal(t, Missed, o)
	_, o = tr.Finish(Key{"run", "bad"}, sp(1, 0, 100, 0, AgentRun))
	assert.Equal(t, Invalid, o)
}

// TestTrackerBound: past maxSpans the rollout least recently added to is
// let go, and its split is not computed; the others are.
func TestTrackerBound(t *testing.T) {
	tr := NewTracker(8)
	a, b := Key{"run", "a"}, Key{"run", "b"}
	for i := range uint64(4) {
		tr.Add(a, sp(10+i, 1, 0, 1, Plain))
	}
	for i := range uint64(4) {
		tr.Add(b, sp(20+i, 1, 0, 1, Plain))
	}
	tr.Add(a, sp(14, 1, 0, 1, Plain)) // a grows its slice past the bound: b is the oldest
	assert.LessOrEqual(t, tr.Held(), 8)
	assert.Equal(t, Counts{Evicted: 1}, tr.TakeCounts())
	tr.Add(b, sp(25, 1, 0, 1, Plain))
	_, o := tr.Finish(b, sp(1, 0, 0, 10, Plain))
	assert.Equal(t, Evicted, o)
	_, o = tr.Finish(a, sp(1, 0, 0, 10, Plain))
	assert.Equal(t, Computed, o)
	assert.Zero(t, tr.Held())
}

func TestTrackerEventsMakeARolloutKnown(t *testing.T) {
	tr := NewTracker(8)
	k := Key{"run", "0-0"}
	assert.True(t, tr.Add(k, sp(2, 1, 0, 1, Event)))
	assert.False(t, tr.Add(k, sp(3, 1, 0, 1, Plain)))
	assert.Equal(t, 1, tr.Held())
}
