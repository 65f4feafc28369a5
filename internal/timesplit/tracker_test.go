// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
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
	tr := NewTracker(2 * minFacts)
	a, b := Key{"run", "a"}, Key{"run", "b"}
	for i := range uint64(minFacts) {
		tr.Add(a, sp(10+i, 1, 0, 1, Plain))
	}
	for i := range uint64(4) {
		tr.Add(b, sp(100+i, 1, 0, 1, Plain))
	}
	assert.Equal(t, 2*minFacts, tr.Held(), "each holds a first slice")
	tr.Add(a, sp(99, 1, 0, 1, Plain)) // a grows its slice past the bound: b is the oldest
	assert.LessOrEqual(t, tr.Held(), 2*minFacts)
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
	assert.Zero(t, tr.Held(), "an event is not kept")
	assert.False(t, tr.Add(k, sp(3, 1, 0, 1, Plain)))
	assert.Equal(t, minFacts, tr.Held(), "a first slice")
}

// TestTrackerEvictsLeastRecentlyAdded: whatever the adds, finishes and
// withholds, the rollouts let go past maxSpans are the rollouts in flight
// least recently added to, in that order (a list kept beside the tracker
// says which), and the facts held never exceed the bound after an Add.
func TestTrackerEvictsLeastRecentlyAdded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxSpans := rapid.IntRange(1, 40).Draw(t, "maxSpans")
		tr := NewTracker(maxSpans)
		keys := make([]Key, rapid.IntRange(1, 12).Draw(t, "rollouts"))
		for i := range keys {
			keys[i] = Key{"run", strconv.Itoa(i)}
		}
		var lru []int // in flight, least recently added to first
		state := map[int]Outcome{}
		remove := func(k int) { lru = slices.DeleteFunc(lru, func(x int) bool { return x == k }) }
		id := uint64(10)
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			k := rapid.IntRange(0, len(keys)-1).Draw(t, "key")
			if _, ended := state[k]; ended {
				continue
			}
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0: // the root
				_, o := tr.Finish(keys[k], sp(1, 0, 0, 10, Plain))
				if o != Missed {
					o = Computed
				}
				state[k] = o
				remove(k)
			case 1:
				tr.Withhold(keys[k])
			default:
				spans := make([]Span, rapid.IntRange(1, 6).Draw(t, "spans"))
				for i := range spans {
					id++
					spans[i] = sp(id, 1, 0, 1, Plain)
				}
				tr.Add(keys[k], spans...)
				remove(k)
				lru = append(lru, k)
				for range tr.TakeCounts().Evicted {
					if len(lru) == 0 {
						t.Fatalf("evicted more rollouts than are in flight")
					}
					state[lru[0]] = Evicted
					lru = lru[1:]
				}
				if tr.Held() > maxSpans {
					t.Fatalf("held %d facts, past max_spans %d", tr.Held(), maxSpans)
				}
			}
		}
		for k := range keys {
			want, ended := state[k]
			if !ended {
				continue
			}
			if _, o := tr.Finish(keys[k], sp(1, 0, 0, 10, Plain)); want == Evicted && o != Evicted {
				t.Fatalf("rollout %d: the tracker kept it, the LRU list let it go (%v)", k, o)
			} else if want != Evicted && o == Evicted {
				t.Fatalf("rollout %d: let go, but it was not the least recently added to", k)
			}
		}
	})
}

// TestTrackerForgetsTheOldestFinished: the tracker remembers the last
// maxDone finished rollouts (a span of one is late), and forgets the ones
// before (a span of one starts it anew); a rollout finished again after it
// was forgotten is remembered from then on.
func TestTrackerForgetsTheOldestFinished(t *testing.T) {
	tr := NewTracker(100)
	key := func(i int) Key { return Key{"run", strconv.Itoa(i)} }
	for i := range maxDone + 2 {
		tr.Add(key(i), sp(2, 1, 0, 1, ModelCall))
		_, o := tr.Finish(key(i), sp(1, 0, 0, 10, Plain))
		assert.Equal(t, Computed, o)
	}
	assert.True(t, tr.Add(key(0), sp(3, 1, 0, 1, ModelCall)), "the oldest is forgotten")
	assert.True(t, tr.Add(key(1), sp(3, 1, 0, 1, ModelCall)), "and the one after it")
	assert.False(t, tr.Add(key(2), sp(3, 1, 0, 1, ModelCall)), "the oldest remembered")
	assert.False(t, tr.Add(key(maxDone+1), sp(3, 1, 0, 1, ModelCall)), "the newest")
	assert.Equal(t, Counts{Late: 2}, tr.TakeCounts())
	_, o := tr.Finish(key(0), sp(1, 0, 0, 10, Plain))
	assert.Equal(t, Computed, o, "finished again, after it was forgotten")
	_, o = tr.Finish(key(0), sp(1, 0, 0, 10, Plain))
	assert.Equal(t, Repeated, o)
	assert.Equal(t, 1, tr.rollouts.inFlight(), "key 1, started anew")
}

// TestTrackerFirstSliceWithinBound: a rollout's first facts slice is
// minFacts long, or the largest power of two within a smaller max_spans, so
// that a rollout with a fact is not let go for the slice alone.
func TestTrackerFirstSliceWithinBound(t *testing.T) {
	for maxSpans, want := range map[int]int{1: 1, 3: 2, 5: 4, 8: 8, 1000: minFacts} {
		tr := NewTracker(maxSpans)
		k := Key{"run", "0-0"}
		tr.Add(k, sp(2, 1, 0, 1, Plain))
		assert.Equal(t, want, tr.Held(), "max_spans %d", maxSpans)
		assert.Equal(t, Counts{}, tr.TakeCounts(), "max_spans %d: nothing let go", maxSpans)
		_, o := tr.Finish(k, sp(1, 0, 0, 10, Plain))
		assert.Equal(t, Computed, o)
	}
}
