// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import (
	"slices"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// Names the split writes (design §4.3).
const (
	AttrLinkType      = "nemo.gym.link.type"
	AttrSplitRollouts = "nemo.gym.split.rollouts"

	LinkTypeJob             = "job"
	LinkTypeParent          = "parent"
	LinkTypePreviousAttempt = "previous_attempt"
	LinkTypeRollout         = "rollout" // job span -> a rollout root cut from its trace
)

// Config is the gym processor's split configuration.
type Config struct {
	MaxJobLinks     int
	MaxTrackedJobs  int
	MaxTrackedRoots int
	JobTTL          int64 // unix nanoseconds
}

// Split holds what one trace per rollout remembers: the roots cut from each
// job trace, the recent roots of each run, and memos of T' and of hex trace
// ids. It is not safe for concurrent use.
type Split struct {
	jobs   jobTable
	roots  rootTable
	tids   traceIDs
	hexes  hexes
	counts Counts
}

// Counts is what the split counted since it was last asked.
type Counts struct {
	LinksMissed int64 // attempt roots that left without the previous attempt's root
}

// New returns an empty split.
func New(cfg Config) *Split {
	return &Split{
		jobs:  newJobTable(cfg.MaxTrackedJobs, cfg.MaxJobLinks, cfg.JobTTL),
		roots: newRootTable(cfg.MaxTrackedRoots),
		tids:  traceIDs{m: make(map[rootKey][16]byte)},
		hexes: hexes{m: make(map[[16]byte]string)},
	}
}

// TraceID is T' of a span of rollout whose run is run and whose original
// trace id is orig.
func (s *Split) TraceID(run string, orig [16]byte, rollout string) [16]byte {
	return s.tids.get(Key(run, orig), rollout)
}

// Hex is orig as 32 lowercase hex digits.
func (s *Split) Hex(orig [16]byte) string { return s.hexes.of(orig) }

// Root records the root of rollout (span id span, original trace orig, in
// run) as it is decided: when it is cut from its parent, for the job span
// of orig; and for a later attempt of its rollout. It reports whether the
// root may leave now: false for a re-dispatched attempt whose previous
// attempt's root was not seen yet (after an outage a sender's retries can
// bring it after its successor's); the caller then holds it, up to wait.
func (s *Split) Root(run string, orig [16]byte, span [8]byte, rollout string, cut bool, now int64) bool {
	k := Key(run, orig)
	ref := RootRef{Trace: s.tids.get(k, rollout), Span: span}
	if cut {
		s.jobs.add(orig, ref, now)
	}
	s.roots.put(k, rollout, ref)
	prev, ok := PreviousAttempt(rollout)
	if !ok {
		return true
	}
	_, known := s.roots.get(k, prev)
	return known
}

// PreviousRoot is the root a leaving root of rollout links to, when its
// rollout is a re-dispatched attempt and the previous attempt's root was
// seen. waited says the root waited for it: leaving without it is counted.
func (s *Split) PreviousRoot(run string, orig [16]byte, rollout string, waited bool) (RootRef, bool) {
	prev, ok := PreviousAttempt(rollout)
	if !ok {
		return RootRef{}, false
	}
	ref, known := s.roots.get(Key(run, orig), prev)
	if !known && waited {
		s.counts.LinksMissed++
	}
	return ref, known
}

// JobLinks is what a job span of original trace orig leaves with: the
// number of roots cut from its trace and links to the first of them (a
// copy; the table changes after).
func (s *Split) JobLinks(orig [16]byte) (int, []RootRef) {
	je := s.jobs.get(orig)
	if je == nil || je.count == 0 {
		return 0, nil
	}
	return je.count, slices.Clone(je.roots)
}

// Expire forgets the job traces older than split.job_ttl.
func (s *Split) Expire(now int64) { s.jobs.expire(now) }

// TakeCounts returns the counts since the last call and resets them.
func (s *Split) TakeCounts() Counts {
	c := s.counts
	s.counts = Counts{}
	return c
}

// Encode writes the split's state (its tables; the memos are left out).
func (s *Split) Encode(w *state.Writer) {
	s.jobs.encode(w)
	s.roots.encode(w)
}

// Restore reads what Encode wrote into a new split.
func (s *Split) Restore(r *state.Reader) {
	s.jobs.restore(r)
	s.roots.restore(r)
}
