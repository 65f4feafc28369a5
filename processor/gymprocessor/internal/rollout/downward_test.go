// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A child that arrives before its parent waits on it and takes the
// parent's rollout when the parent arrives; one that arrives after leaves
// at once with it.
func TestDownward(t *testing.T) {
	o := newRecorder(testConfig())
	held := o.arrive(0, "run", span{id: "recv", parent: "run", trace: "t"})
	assert.Equal(t, []bool{true}, held, "its parent has not arrived: it waits")
	o.arrive(sec, "run", span{id: "run", trace: "t", evidence: "1-0"})
	assert.Equal(t, "1-0", o.rollout("run"))
	assert.Equal(t, "1-0", o.rollout("recv"), "told when its parent decided")
	assert.Equal(t, HowDownward, o.leftBy["recv"].How)
	held = o.arrive(2*sec, "run", span{id: "send", parent: "run", trace: "t"})
	assert.Equal(t, []bool{false}, held)
	assert.Equal(t, "1-0", o.rollout("send"))
	assert.Zero(t, o.c.Pending())
}

// A parent that left in no rollout lets its waiting children go at once,
// in none (reason parent_none), once their own upward decision found
// nothing.
func TestDownwardParentInNone(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", span{id: "child", parent: "p", trace: "t"})
	o.arrive(0, "run", span{id: "p", trace: "t"})
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("p"), "a root waits wait")
	o.tick(30*sec, false)
	assert.Equal(t, "-", o.rollout("p"))
	assert.Equal(t, "-", o.rollout("child"))
	k := o.c.TakeCounts()
	assert.Equal(t, int64(1), k.Released[ReasonWait], "the root")
	assert.Equal(t, int64(1), k.Released[ReasonParentNone], "its child")
}

// Many rollouts under a gym.job span that has not arrived (it ends with the
// run, hours later): every orchestrator span waits on that absent parent and
// then leaves after settle; the parent's waiter list must not keep them all
// (it did: one node per rollout for the whole run).
func TestAbsentParentDoesNotKeepLeftChildren(t *testing.T) {
	const rollouts = 2000
	o := newRecorder(testConfig())
	now := int64(0)
	for w := 0; w < rollouts; w += 16 {
		var spans []span
		for r := w; r < w+16; r++ {
			id := fmt.Sprint(r)
			spans = append(spans,
				span{id: id + "/run", parent: id + "/dispatch", trace: "job"},
				span{id: id + "/rollout", parent: id + "/run", trace: "job", evidence: id + "-0"},
				span{id: id + "/dispatch", parent: "job", trace: "job"},
			)
		}
		o.arrive(now, "run", spans...)
		now += sec
		o.tick(now, false)
	}
	for i := 0; i < 4; i++ { // past settle: every upward root has left
		now += 5 * sec
		o.tick(now, false)
	}
	job, _ := o.c.idx.get(o.c.idx.Hash(Key{Trace: traceID("job"), Span: spanID("job")}), Key{Trace: traceID("job"), Span: spanID("job")})
	require.NotNil(t, job)
	longest, waiting := 0, int32(0)
	o.c.idx.m.each(func(n *Node) {
		if len(n.waiters()) > longest {
			longest, waiting = len(n.waiters()), n.wait.nWait
		}
	})
	t.Logf("%d rollouts: longest waiter list %d (%d still waiting), %d spans pending", rollouts, longest, waiting, o.c.Pending())
	assert.LessOrEqual(t, longest, 2*int(waiting)+8, "a waiter list holds at most twice the children still waiting")
	assert.Less(t, longest, rollouts/10, "left children are not kept")
	o.tick(now, true)
	assert.Len(t, o.left, 3*rollouts, "every span left once")
}
