// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPoolGrow: grow keeps the spans, takes a power of two at least twice
// the old capacity, and gives the old slice back to the pool, which the
// next grow of that class takes.
func TestPoolGrow(t *testing.T) {
	var p pool
	s := p.grow(nil, 3, 100)
	assert.Equal(t, 0, len(s))
	assert.Equal(t, 4, cap(s))
	s = append(s, sp(1, 0, 0, 1, Plain), sp(2, 1, 0, 1, Plain), sp(3, 1, 0, 1, Plain), sp(4, 1, 0, 1, Plain))
	g := p.grow(s, 5, 100)
	assert.Equal(t, 8, cap(g))
	assert.Equal(t, s, g, "the spans are kept")
	assert.Equal(t, 4, p.kept, "the old slice is pooled")
	again := p.grow(nil, 4, 100)
	assert.Equal(t, 4, cap(again))
	assert.Equal(t, &s[:1][0], &again[:1][0], "the pooled slice is reused")
	assert.Zero(t, p.kept)
}

// TestPoolRoom: the pool keeps no more than room allows, nor a slice that
// is not of a class.
func TestPoolRoom(t *testing.T) {
	var p pool
	p.put(make([]Span, 0, 8), 10)
	assert.Equal(t, 8, p.kept)
	p.put(make([]Span, 0, 4), 10)
	assert.Equal(t, 8, p.kept, "past room")
	p.put(make([]Span, 0, 3), 100)
	assert.Equal(t, 8, p.kept, "not a power of two")
	p.put(make([]Span, 0, 2*maxPooledCap), 1<<30)
	assert.Equal(t, 8, p.kept, "past the largest class")
	big := p.grow(make([]Span, maxPooledCap), maxPooledCap+1, 1<<30)
	assert.GreaterOrEqual(t, cap(big), maxPooledCap+1)
	assert.Equal(t, 8, p.kept, "a slice past the classes grows as append grows")
}

// TestTrackerReusesFacts: a tracker that finished a rollout allocates
// nothing for the next of the same size.
func TestTrackerReusesFacts(t *testing.T) {
	tr := NewTracker(1 << 10)
	run := func(id string) {
		k := Key{"run", id}
		for i := range uint64(40) {
			tr.Add(k, sp(10+i, 2, 1, 2, Plain))
		}
		tr.Finish(k, sp(2, 1, 0, 10, AgentRun))
	}
	run("warm")
	ids := []string{"a", "b", "c", "d", "e"} // AllocsPerRun runs once more first
	i := 0
	allocs := testing.AllocsPerRun(len(ids)-1, func() { run(ids[i]); i++ })
	assert.LessOrEqual(t, allocs, 3.0, "the rollout's entries only, no facts slice")
}
