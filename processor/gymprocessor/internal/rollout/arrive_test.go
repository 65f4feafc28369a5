// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A span that cannot be indexed (a zero span id, or a duplicate) leaves at
// once with the rollout it shows, or its first copy left with, or its
// parent has.
func TestUnindexedSpansLeaveAtOnce(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", span{id: "parent", trace: "t", evidence: "1-0"})
	o.leftBy = map[string]Departure{}
	o.arrive(sec, "run", span{id: "parent", trace: "t"}) // a duplicate, no evidence of its own
	d := o.leftBy["parent"]
	assert.True(t, d.Unindexed)
	assert.Equal(t, "1-0", d.Rollout, "its first copy's")
	assert.Equal(t, HowDirect, d.How)

	o.c.Begin(2 * sec)
	r := o.c.Run("run", "svc", false)
	f := o.facts(span{id: "zero", parent: "parent", trace: "t"})
	f.Key.Span = [8]byte{}
	o.names[f.Key] = "zero"
	assert.False(t, o.c.Arrive(&f, r))
	o.c.End()
	d = o.leftBy["zero"]
	assert.True(t, d.Unindexed)
	assert.Equal(t, "1-0", d.Rollout, "its parent's")
	assert.Equal(t, HowDownward, d.How)
	k := o.c.TakeCounts()
	assert.Equal(t, int64(1), k.Duplicates)
	assert.Equal(t, int64(3), k.Received)
}

// A duplicate of a held span that its owner takes as an unchanged copy
// leaves the batch and leaves later with the held span (counted resent).
type copyTaker struct{ *recorder }

func (c copyTaker) TakeCopy(Slot) bool { return true }

func TestResentCopyIsTakenWithTheHeldSpan(t *testing.T) {
	o := newRecorder(testConfig())
	o.c.owner = copyTaker{o}
	o.arrive(0, "run", span{id: "held", parent: "absent", trace: "t"})
	held := o.arrive(sec, "run", span{id: "held", parent: "absent", trace: "t"})
	assert.Equal(t, []bool{true}, held, "taken out of its batch")
	assert.Equal(t, int64(1), o.c.TakeCounts().Resent)
	assert.Equal(t, 1, o.c.Pending())
}

// A parent that arrives after one of its children had to leave is counted
// late, and still learns its rollout from below.
func TestLateParent(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", span{id: "child", parent: "top", trace: "t"}, span{id: "r", parent: "child", trace: "t", evidence: "1-0"})
	o.tick(5*sec, false)
	require.Equal(t, "", o.rollout("child"), "decided upward, it waits for its parent's verdict")
	o.tick(30*sec, false) // cut: its parent did not come within wait
	require.Equal(t, "1-0", o.rollout("child"))
	require.True(t, o.leftBy["child"].Cut)
	o.arrive(31*sec, "run", span{id: "top", trace: "t"})
	assert.Equal(t, int64(1), o.c.TakeCounts().LateParents)
	o.tick(36*sec, false)
	assert.Equal(t, "1-0", o.rollout("top"))
}
