// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import "math/bits"

// Key is a rollout: (run, rollout id); rollout ids repeat across runs.
type Key = [2]string

// Outcome is what Finish could say of a rollout.
type Outcome uint8

const (
	// Computed: the split is known.
	Computed Outcome = iota
	// Missed: some of the rollout's spans went elsewhere (Withhold: an
	// earlier process or another collector consumed them).
	Missed
	// Evicted: the rollout's facts were let go to stay within max_spans, or
	// it was finished before with another root.
	Evicted
	// Invalid: the root ends before it starts.
	Invalid
	// Repeated: the root was finished before (a redelivery): the split it
	// got then, for a line written again; not to be counted again.
	Repeated
	// Outcomes is the number of outcomes.
	Outcomes
)

var outcomeNames = [Outcomes]string{"computed", "missed_spans", "evicted", "invalid", "repeated"}

// String is the outcome's name on the components' own metrics.
func (o Outcome) String() string {
	if o < Outcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// OutcomeNames are the names of every outcome, in order.
func OutcomeNames() []string { return outcomeNames[:] }

// maxOpen bounds the rollouts in flight a Tracker follows (those with no
// facts too: withheld, or with events only); past it the least recently
// added to is let go.
const maxOpen = 1 << 17

// maxDone is how many finished rollouts a Tracker remembers: a span that
// arrives after its rollout's root is counted late (and left out) instead of
// starting the rollout over, and a root delivered again gets the same split.
const maxDone = 1 << 16

// Tracker holds the facts of the rollouts in flight until their roots
// arrive, at most maxSpans of them (the rollouts least recently added to are
// let go first; their splits are not computed). It is not safe for
// concurrent use.
type Tracker struct {
	maxSpans int
	firstCap int // a rollout's first facts slice: minFacts, within maxSpans
	held     int // facts held, by the capacity of their slices
	rollouts table
	// The slot of the last Add's rollout: a caller that adds a span at a
	// time (the genai connector) finds it without a hash.
	lastKey  Key
	lastSlot int32 // -1: none
	counts   Counts
	walk     walk // Finish's, reused
	pool     pool // the facts slices of finished rollouts, reused
}

type finished struct {
	root    uint64
	split   Split
	outcome Outcome
}

// Counts are what a Tracker saw since the last TakeCounts.
type Counts struct {
	// Late: spans that arrived after their rollout's root (left out).
	Late int64
	// Evicted: rollouts let go to stay within maxSpans.
	Evicted int64
}

// minFacts is the capacity of a rollout's first facts slice: a Gym
// rollout has more (its gym.rollout, /run, model and tool calls, verify),
// which a slice that started at one grew four or five times to hold.
const minFacts = 8

// NewTracker returns a tracker that holds at most maxSpans facts.
func NewTracker(maxSpans int) *Tracker {
	maxSpans = max(1, maxSpans)
	firstCap := 1 << (bits.Len(uint(min(minFacts, maxSpans))) - 1) // a power of two: a pool's class
	return &Tracker{maxSpans: maxSpans, firstCap: firstCap, rollouts: newTable(), lastSlot: -1}
}

// Add records spans, in order, of rollout k. It reports whether k is new to
// the tracker (neither in flight nor finished): the caller may then ask
// whether an earlier process saw some of its spans (Withhold). An Event span
// is not kept, but makes its rollout known. Spans that arrive after k was
// finished are counted late, and left out.
func (t *Tracker) Add(k Key, spans ...Span) (isNew bool) {
	i := t.lastSlot
	if i < 0 || t.lastKey != k {
		id := t.rollouts.idOf(k)
		var f *finished
		var known bool
		if i, f, known = t.rollouts.find(id); f != nil {
			if f.outcome == Computed {
				t.counts.Late += int64(len(spans))
			}
			return false
		}
		if !known {
			if t.rollouts.inFlight() >= maxOpen {
				t.evictOldest()
			}
			i, isNew = t.rollouts.open(id), true
		}
		t.lastKey, t.lastSlot = k, i
	}
	if !isNew { // open made it the most recently added to
		t.rollouts.touch(i)
	}
	r := &t.rollouts.slots[i]
	if r.withheld {
		return isNew
	}
	n := 0
	for _, s := range spans {
		if s.Role != Event {
			n++
		}
	}
	c := cap(r.spans)
	need := len(r.spans) + n
	if c == 0 && n > 0 {
		need = max(need, t.firstCap)
	}
	r.spans = t.pool.grow(r.spans, need, t.poolRoom())
	for _, s := range spans {
		if s.Role != Event {
			r.spans = append(r.spans, s)
		}
	}
	if t.held += cap(r.spans) - c; t.held > t.maxSpans {
		t.evict()
	}
	return isNew
}

// Withhold says that some spans of rollout k went elsewhere: its split will
// not be computed (Missed), and its facts are let go.
func (t *Tracker) Withhold(k Key) {
	if i, f, known := t.rollouts.find(t.rollouts.idOf(k)); known && f == nil {
		r := &t.rollouts.slots[i]
		t.held -= cap(r.spans)
		t.pool.put(r.spans, t.poolRoom())
		r.spans, r.withheld = nil, true
	}
}

// Finish computes the split of rollout k from root, its root, and the facts
// added before, then lets them go. A root finished before gets the split it
// got then (Repeated); another root of a finished rollout gets none
// (Evicted).
func (t *Tracker) Finish(k Key, root Span) (Split, Outcome) {
	id := t.rollouts.idOf(k)
	i, done, known := t.rollouts.find(id)
	if done != nil {
		switch {
		case done.outcome != Computed:
			return Split{}, done.outcome
		case done.root != root.ID:
			return Split{}, Evicted
		}
		return done.split, Repeated
	}
	f := finished{root: root.ID, outcome: Missed}
	var spans []Span
	if known {
		spans = t.rollouts.slots[i].spans
	}
	if !known || !t.rollouts.slots[i].withheld {
		var ok bool
		if f.split, ok = t.walk.of(root, spans); ok {
			f.outcome = Computed
		} else {
			f.outcome = Invalid
		}
	}
	if known {
		t.drop(i, f) // after the walk: its slice may be reused
	} else {
		t.rollouts.finish(id, f)
	}
	return f.split, f.outcome
}

// TakeCounts returns the counts since the last call and resets them.
func (t *Tracker) TakeCounts() Counts {
	c := t.counts
	t.counts = Counts{}
	return c
}

// poolRoom is how much capacity the pool may keep: what the facts held
// leave of maxSpans.
func (t *Tracker) poolRoom() int { return t.maxSpans - t.held }

// Held is the number of facts held (by capacity).
func (t *Tracker) Held() int { return t.held }

// evict lets the rollouts least recently added to go until the facts are
// within maxSpans; their splits are not computed.
func (t *Tracker) evict() {
	for t.held > t.maxSpans && t.evictOldest() {
	}
}

func (t *Tracker) evictOldest() bool {
	i, ok := t.rollouts.oldest()
	if ok {
		t.drop(i, finished{outcome: Evicted})
		t.counts.Evicted++
	}
	return ok
}

// drop lets go of the rollout in flight in slot i, finished with f.
func (t *Tracker) drop(i int32, f finished) {
	r := &t.rollouts.slots[i]
	t.held -= cap(r.spans)
	t.pool.put(r.spans, t.poolRoom())
	t.rollouts.close(i, f)
	if t.lastSlot == i {
		t.lastKey, t.lastSlot = Key{}, -1
	}
}
