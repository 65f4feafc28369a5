// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At max_pending_spans the held span nearest its deadline leaves at once,
// as it stands (reason bound), never dropped; max_pending_bytes likewise.
func TestBoundsLetTheNearestDeadlineGo(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 3
	o := newRecorder(cfg)
	for i := range 6 {
		o.arrive(int64(i)*sec/10, "run", span{id: fmt.Sprint("u", i), trace: "t", parent: "absent"})
		require.LessOrEqual(t, o.c.Pending(), 3)
	}
	for i := range 3 {
		assert.Equal(t, "-", o.rollout(fmt.Sprint("u", i)), "the oldest left")
	}
	assert.Equal(t, int64(3), o.c.TakeCounts().Released[ReasonBound])

	cfg = testConfig()
	cfg.MaxPendingBytes = 250 // the recorder's spans are 100 bytes each
	o = newRecorder(cfg)
	for i := range 4 {
		o.arrive(0, "run", span{id: fmt.Sprint("b", i), trace: "t", parent: "absent"})
	}
	assert.Equal(t, 2, o.c.Pending())
	assert.Equal(t, int64(200), o.c.PendingBytes())
}

// A bound releases an upward candidate decided with what is known, and a
// part's hold as given up.
func TestBoundDecidesAsItStands(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 1
	o := newRecorder(cfg)
	o.arrive(0, "run", span{id: "top", trace: "t"}, span{id: "r", parent: "top", trace: "t", evidence: "1-0"})
	o.decided = func(n *Node) bool { return o.c.Hold(n, HoldPeer) } // due at 6s, before the next span's 7s
	o.arrive(sec, "run", span{id: "other", trace: "u", evidence: "2-0"})
	assert.Equal(t, "1-0", o.rollout("top"), "its upward decision, taken at once")
	o.decided = nil
	o.arrive(2*sec, "run", span{id: "third", trace: "v", parent: "absent"})
	assert.True(t, o.leftBy["other"].GaveUp)
	assert.Equal(t, 1, o.c.Pending())
}

func TestDeadlines(t *testing.T) {
	d := deadlines{settle: 5, wait: 30, rolloutWait: 7200}
	root := &entry{n: &Node{}, arrival: 100}
	assert.Equal(t, int64(130), d.undecidedRelease(root, 110), "a root: wait")
	none := &entry{n: &Node{parent: &Node{how: HowNone, state: stEmitted}}, arrival: 100}
	assert.Equal(t, int64(110), d.undecidedRelease(none, 110), "a parent in none: now")
	open := &entry{n: &Node{parent: &Node{}}, arrival: 100}
	assert.Equal(t, int64(7300), d.undecidedRelease(open, 110), "an open parent: rollout_wait")
	assert.Equal(t, int64(105), d.upwardDecision(100))
	assert.Equal(t, int64(130), d.rootCut(100))
	assert.Equal(t, int64(140), d.previousAttemptRoot(110))
	assert.Equal(t, int64(105), d.peerWait(100))
	assert.Equal(t, int64(7300), d.rolloutParent(100))
	assert.Equal(t, int64(80), d.indexKeptAfter(110))

	assert.Equal(t, ReasonShutdown, releaseReason(open.n, ReasonShutdown))
	assert.Equal(t, ReasonWait, releaseReason(root.n, ReasonWait))
	assert.Equal(t, ReasonParentMissing, releaseReason(open.n, ReasonWait))
	assert.Equal(t, ReasonParentNone, releaseReason(none.n, ReasonWait))
}

// The index keeps the entries of spans that left for wait, so that late
// children are still decided downward, and at most max_pending_spans of
// them beyond the held spans.
func TestIndexTrim(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingSpans = 10
	o := newRecorder(cfg)
	for i := range 50 {
		o.arrive(0, "run", span{id: fmt.Sprint("d", i), trace: "t", evidence: "1-0"})
		require.LessOrEqual(t, o.c.Indexed()-o.c.Pending(), cfg.MaxPendingSpans)
	}
	held := o.arrive(sec, "run", span{id: "late", parent: "d49", trace: "t"})
	assert.Equal(t, []bool{false}, held)
	assert.Equal(t, "1-0", o.rollout("late"), "its parent's entry was kept")
	o.tick(31*sec+1, false)
	assert.Zero(t, o.c.Indexed(), "entries expire after wait")
}
