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

// Within wait after a restart, a span whose parent left in no rollout and
// whose upward decision found nothing waits for the spans below it: a
// sender retries, with backoff, the batch the killed collector had not
// acknowledged, and the orchestrator's gym.job can come before it. Without
// the restart the span leaves with its parent, as above.
func TestDownwardParentInNoneAfterRestart(t *testing.T) {
	// The orchestrator's POST to /run, under gym.job; the agent's spans
	// below it are in a sender's retry.
	post := span{id: "post", parent: "job", trace: "t"}
	job := span{id: "job", trace: "t", job: true}
	below := []span{{id: "run", parent: "post", trace: "t"}, {id: "rollout", parent: "run", trace: "t", evidence: "1-0"}}

	o := newRecorder(testConfig())
	o.arrive(0, "run", post)
	o.tick(5*sec, false)
	o.arrive(7*sec, "run", job)
	assert.Equal(t, "-", o.rollout("post"), "without a restart: with its parent, at once")

	o = newRecorder(testConfig())
	o.arrive(0, "run", post)
	o.restart(1 * sec)
	o.tick(5*sec, false)
	o.arrive(7*sec, "run", job)
	assert.Equal(t, "", o.rollout("post"), "after a restart it waits for what is below it")
	o.arrive(9*sec, "run", below...)
	assert.Equal(t, "1-0", o.rollout("post"), "upward, from the sender's retry")
	assert.Equal(t, "1-0", o.rollout("run"))
	o.tick(12*sec, false)
	assert.Equal(t, "-", o.rollout("job"), "the job span leaves once its trace drains")
	assert.True(t, o.leftBy["post"].Root, "the POST is its rollout's root")

	// Nothing comes: it leaves when the wait after the restart ends, and
	// the job span, which waits for its trace, with it.
	o = newRecorder(testConfig())
	o.arrive(0, "run", post)
	o.restart(1 * sec)
	o.tick(5*sec, false)
	o.arrive(7*sec, "run", job)
	o.tick(31*sec-1, false)
	assert.Equal(t, "", o.rollout("post"))
	o.tick(31*sec, false)
	assert.Equal(t, "-", o.rollout("post"))
	assert.Equal(t, "-", o.rollout("job"))
	assert.Equal(t, int64(1), o.c.TakeCounts().Released[ReasonParentNone])

	// A span that settles after the wait of a restart leaves at once again.
	o = newRecorder(testConfig())
	o.restart(0)
	o.arrive(30*sec, "run", job, post)
	o.tick(35*sec, false)
	assert.Equal(t, "-", o.rollout("post"))
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
