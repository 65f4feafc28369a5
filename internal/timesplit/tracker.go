// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"hash/maphash"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

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
	held     int             // facts held, by the capacity of their slices
	seeds    [2]maphash.Seed // of rolloutIDs
	open     *bounded.Table[rolloutID, *rollout]
	done     *bounded.Ring[rolloutID, finished]
	// The rollout of the last Add, the newest in open: a caller that adds
	// a span at a time (the genai connector) finds it without a hash.
	last    rolloutID
	lastKey Key
	lastR   *rollout
	counts  Counts
	walk    walk // Finish's, reused
	pool    pool // the facts slices of finished rollouts, reused
}

// rolloutID is what a Tracker knows a rollout by: two 64-bit keyed hashes
// of its Key, independently seeded. Its tables then hold and compare 16
// bytes, and never read the ids' strings (held apart from the table, and
// out of the cache by the time a rollout's next batch comes: reading them
// was a third of Add). Two of n rollouts share an id with a probability
// below n²/2^129: for the 2^18 a Tracker holds at most, below 2^-92.
type rolloutID [2]uint64

func (t *Tracker) idOf(k Key) rolloutID {
	return rolloutID{maphash.Comparable(t.seeds[0], k), maphash.Comparable(t.seeds[1], k)}
}

type rollout struct {
	spans    []Span
	withheld bool
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

// NewTracker returns a tracker that holds at most maxSpans facts.
func NewTracker(maxSpans int) *Tracker {
	return &Tracker{
		maxSpans: max(1, maxSpans),
		seeds:    [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		open:     bounded.New[rolloutID, *rollout](1 << 30), // bounded by maxSpans instead
		done:     bounded.NewRing[rolloutID, finished](maxDone),
	}
}

// Add records spans, in order, of rollout k. It reports whether k is new to
// the tracker (neither in flight nor finished): the caller may then ask
// whether an earlier process saw some of its spans (Withhold). An Event span
// is not kept, but makes its rollout known. Spans that arrive after k was
// finished are counted late, and left out.
func (t *Tracker) Add(k Key, spans ...Span) (isNew bool) {
	r := t.lastR
	if r == nil || t.lastKey != k {
		id := t.idOf(k)
		var ok bool
		if r, ok = t.open.GetTouch(id); !ok {
			if f, done := t.done.Get(id); done {
				if f.outcome == Computed {
					t.counts.Late += int64(len(spans))
				}
				return false
			}
			r, isNew = t.open1(id), true
		}
		t.last, t.lastKey, t.lastR = id, k, r
	}
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
	r.spans = t.pool.grow(r.spans, len(r.spans)+n, t.poolRoom())
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

// open1 starts following rollout k.
func (t *Tracker) open1(k rolloutID) *rollout {
	if t.open.Len() >= maxOpen {
		t.evictOldest()
	}
	r := &rollout{}
	t.open.Put(k, r)
	return r
}

// Withhold says that some spans of rollout k went elsewhere: its split will
// not be computed (Missed), and its facts are let go.
func (t *Tracker) Withhold(k Key) {
	if r, ok := t.open.Get(t.idOf(k)); ok {
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
	id := t.idOf(k)
	// A rollout in flight is not among the finished: Add opens none that
	// is, and every rollout is let go from open before it is put in done.
	r, inFlight := t.open.Get(id)
	if !inFlight {
		if f, ok := t.done.Get(id); ok {
			switch {
			case f.outcome != Computed:
				return Split{}, f.outcome
			case f.root != root.ID:
				return Split{}, Evicted
			}
			return f.split, Repeated
		}
	}
	f := finished{root: root.ID, outcome: Missed}
	if r == nil || !r.withheld {
		var spans []Span
		if r != nil {
			spans = r.spans
		}
		var ok bool
		if f.split, ok = t.walk.of(root, spans); ok {
			f.outcome = Computed
		} else {
			f.outcome = Invalid
		}
	}
	if inFlight {
		t.drop(id, r) // after the walk: its slice may be reused
	}
	t.done.PutNew(id, f)
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
	k, r, ok := t.open.Oldest()
	if ok {
		t.drop(k, r)
		t.done.Put(k, finished{outcome: Evicted})
		t.counts.Evicted++
	}
	return ok
}

// drop lets go of r, rollout k in flight.
func (t *Tracker) drop(k rolloutID, r *rollout) {
	t.held -= cap(r.spans)
	t.open.Delete(k)
	t.pool.put(r.spans, t.poolRoom())
	if t.last == k {
		t.last, t.lastKey, t.lastR = rolloutID{}, Key{}, nil
	}
}
