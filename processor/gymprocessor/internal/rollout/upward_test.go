// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummaryLattice(t *testing.T) {
	r := func(id string) summary { return summary{id: id} }
	conflict := summary{conflict: true}
	for _, c := range []struct {
		s, c, want summary
		changed    bool
	}{
		{summary{}, summary{}, summary{}, false},
		{summary{}, r("a"), r("a"), true},
		{r("a"), r("a"), r("a"), false},
		{r("a"), r("b"), conflict, true},
		{r("a"), conflict, conflict, true},
		{conflict, r("a"), conflict, false},
		{r("a"), summary{}, r("a"), false},
	} {
		s := c.s
		assert.Equal(t, c.changed, s.merge(c.c), "%v + %v", c.s, c.c)
		assert.Equal(t, c.want, s, "%v + %v", c.s, c.c)
	}
}

// The agent's POST /run, above gym.rollout, takes the rollout upward settle
// after it arrived, looking through an undecided span between; it is the
// rollout's root, and is cut from its parent, a job span.
func TestUpwardAfterSettle(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run",
		span{id: "post-run", parent: "caller", trace: "t"},
		span{id: "middle", parent: "post-run", trace: "t"},
		span{id: "rollout", parent: "middle", trace: "t", evidence: "1-0"},
		span{id: "caller", trace: "t", job: true},
	)
	assert.Equal(t, "", o.rollout("post-run"), "not before settle")
	o.tick(5*sec-1, false)
	assert.Equal(t, "", o.rollout("post-run"))
	o.tick(5*sec, false)
	d := o.leftBy["post-run"]
	assert.Equal(t, "1-0", d.Rollout)
	assert.Equal(t, HowUpward, d.How)
	assert.True(t, d.Root, "the top span decided upward")
	assert.True(t, d.Cut, "its parent is a job span")
	assert.Equal(t, LinkJob, d.CutLink)
	assert.Equal(t, "1-0", o.rollout("middle"))
	assert.False(t, o.leftBy["middle"].Root)
}

// Spans of two rollouts below mean none (reason conflict); a span with its
// own rollout hides those below it.
func TestUpwardConflict(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run",
		span{id: "top", trace: "t"},
		span{id: "a", parent: "top", trace: "t", evidence: "1-0"},
		span{id: "a-child", parent: "a", trace: "t", evidence: "3-0"},
		span{id: "b", parent: "top", trace: "t", evidence: "2-0"},
		span{id: "alone", trace: "u"},
		span{id: "c", parent: "alone", trace: "u", evidence: "4-0"},
		span{id: "c-child", parent: "c", trace: "u", evidence: "5-0"},
	)
	o.tick(5*sec, false)
	assert.Equal(t, "-", o.rollout("top"))
	assert.Equal(t, int64(1), o.c.TakeCounts().Released[ReasonConflict])
	assert.Equal(t, "4-0", o.rollout("alone"), "5-0 is hidden by 4-0 above it")
}

// An upward decision that comes after settle (the spans below arrive late)
// is taken as they arrive.
func TestUpwardAfterSettleAsTheyCome(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", span{id: "top", trace: "t"})
	o.tick(5*sec, false)
	assert.Equal(t, "", o.rollout("top"), "a root waits wait for spans below it")
	o.arrive(6*sec, "run", span{id: "below", parent: "top", trace: "t", evidence: "1-0"})
	assert.Equal(t, "1-0", o.rollout("top"))
	assert.Equal(t, HowUpward, o.leftBy["top"].How)
}
