// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A request whose local parent ended before it began took a finished
// request's context: it is detached from it, whether the parent arrives
// before or after it, and its rollout's root is cut with a parent link.
// A local parent that was still open is its real parent.
func TestLeakedContext(t *testing.T) {
	prev := []span{
		{id: "prev-run", trace: "t", start: 5, end: 95},
		{id: "prev-rollout", parent: "prev-run", trace: "t", evidence: "10-0", start: 6, end: 90},
	}
	next := []span{
		{id: "next-run", parent: "prev-run", trace: "t", localRequest: true, start: 96, end: 290},
		{id: "next-rollout", parent: "next-run", trace: "t", evidence: "10-1", start: 97, end: 280},
	}
	for name, order := range map[string][]span{
		"parent first": append(append([]span{}, prev...), next...),
		"parent last":  append(append([]span{}, next...), prev...),
	} {
		t.Run(name, func(t *testing.T) {
			o := newRecorder(testConfig())
			o.arrive(0, "run", order...)
			o.tick(35*sec, false)
			assert.Equal(t, "10-0", o.rollout("prev-run"), "it keeps its own rollout, not a conflict")
			assert.Equal(t, "10-1", o.rollout("next-run"))
			assert.True(t, o.leftBy["next-run"].Root)
			assert.True(t, o.leftBy["next-run"].Cut, "cut from the span it named")
			assert.Equal(t, int64(1), o.c.TakeCounts().LeakedContexts)
		})
	}

	o := newRecorder(testConfig())
	o.arrive(0, "run",
		span{id: "middleware", trace: "t", start: 300, end: 500},
		span{id: "run", parent: "middleware", trace: "t", localRequest: true, start: 305, end: 495},
		span{id: "rollout", parent: "run", trace: "t", evidence: "10-2", start: 306, end: 490},
	)
	o.tick(5*sec, false)
	assert.Equal(t, "10-2", o.rollout("middleware"), "an open local parent is really above it")
	assert.False(t, o.leftBy["run"].Root)
	assert.Zero(t, o.c.TakeCounts().LeakedContexts)
}
