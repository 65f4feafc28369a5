// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The root rule (design §4.3), case by case: the top span decided upward is
// its rollout's root, cut from a parent that is not in its rollout.
func TestRootCuts(t *testing.T) {
	type want struct {
		root, cut bool
		link      LinkType
	}
	for _, c := range []struct {
		name   string
		split  bool
		parent []span // the parent's arrival with the root's; nil: it never arrives
		after  int64  // when the outcome is looked at
		want   want
	}{
		{"parent is a job span", true, []span{{id: "p", trace: "t", job: true}}, 5 * sec, want{true, true, LinkJob}},
		{"parent above two rollouts", true, []span{{id: "p", trace: "t"}, {id: "other", parent: "p", trace: "t", evidence: "2-0"}}, 5 * sec, want{true, true, LinkParent}},
		{"parent never arrives: cut after wait", true, nil, 35 * sec, want{true, true, LinkParent}},
		{"split off: a root, never cut", false, nil, 35 * sec, want{true, false, LinkParent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Split = c.split
			o := newRecorder(cfg)
			spans := []span{{id: "root", parent: "p", trace: "t"}, {id: "rollout", parent: "root", trace: "t", evidence: "1-0"}}
			o.arrive(0, "run", append(c.parent, spans...)...)
			o.tick(5*sec, false)
			if c.after > 5*sec {
				assert.Equal(t, "", o.rollout("root"), "it waits for its parent's verdict")
				o.tick(c.after, false)
			}
			d := o.leftBy["root"]
			assert.Equal(t, "1-0", d.Rollout)
			assert.Equal(t, c.want, want{d.Root, d.Cut, d.CutLink})
		})
	}
}

// A parent that turns out to be in the root's own rollout makes the span
// below it no root; the parent is (upward too).
func TestRootParentInTheRollout(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run",
		span{id: "dispatch", trace: "t"},
		span{id: "run", parent: "dispatch", trace: "t"},
		span{id: "rollout", parent: "run", trace: "t", evidence: "1-0"},
	)
	o.tick(5*sec, false)
	assert.False(t, o.leftBy["run"].Root)
	assert.False(t, o.leftBy["run"].Cut)
	assert.True(t, o.leftBy["dispatch"].Root)
	assert.False(t, o.leftBy["dispatch"].Cut, "no parent to cut from")
}

// Owner.Rooted may keep a root held (a part waiting for its previous
// attempt's root): it leaves at its deadline, wait later, given up.
func TestRootHeldByAPart(t *testing.T) {
	o := newRecorder(testConfig())
	o.rooted = func(n *Node, run *Run, cut bool) bool {
		assert.Equal(t, "run", run.ID())
		return o.c.Hold(n, HoldPreviousAttempt)
	}
	o.arrive(0, "run", span{id: "root", trace: "t"}, span{id: "rollout", parent: "root", trace: "t", evidence: "1-0-a1"})
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("root"))
	o.tick(35*sec-1, false)
	assert.Equal(t, "", o.rollout("root"), "wait after it was rooted")
	o.tick(35*sec, false)
	d := o.leftBy["root"]
	assert.True(t, d.Root)
	assert.True(t, d.GaveUp)
	assert.Equal(t, HoldPreviousAttempt, d.Phase)
}
