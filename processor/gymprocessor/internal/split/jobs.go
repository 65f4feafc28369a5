// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import (
	"bytes"
	"slices"
	"sort"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// RootRef names a rollout root after the split: its trace id T' and its
// span id.
type RootRef struct {
	Trace [16]byte
	Span  [8]byte
}

func (a RootRef) less(b RootRef) bool {
	if c := bytes.Compare(a.Trace[:], b.Trace[:]); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.Span[:], b.Span[:]) < 0
}

// jobEntry is what a job span learns about the roots cut from its trace.
type jobEntry struct {
	created int64
	count   int
	roots   []RootRef // the smallest maxLinks, sorted
}

// jobTable remembers, per original trace id, the rollout roots this instance
// cut from it. Bounded by split.max_tracked_jobs (oldest first out) and
// split.job_ttl.
type jobTable struct {
	t        *bounded.Table[[16]byte, *jobEntry]
	maxLinks int
	ttl      int64
}

func newJobTable(maxJobs, maxLinks int, ttl int64) jobTable {
	return jobTable{t: bounded.New[[16]byte, *jobEntry](maxJobs), maxLinks: maxLinks, ttl: ttl}
}

// get returns what was cut from trace, or nil.
func (t *jobTable) get(trace [16]byte) *jobEntry {
	e, _ := t.t.Get(trace)
	return e
}

func (t *jobTable) add(trace [16]byte, ref RootRef, now int64) {
	e, ok := t.t.Get(trace)
	if !ok {
		e = &jobEntry{created: now}
		t.t.Put(trace, e)
	}
	e.count++
	if t.maxLinks == 0 {
		return
	}
	i := sort.Search(len(e.roots), func(i int) bool { return ref.less(e.roots[i]) })
	if len(e.roots) >= t.maxLinks && i >= len(e.roots) {
		return
	}
	e.roots = slices.Insert(e.roots, i, ref)
	if len(e.roots) > t.maxLinks {
		e.roots = e.roots[:t.maxLinks]
	}
}

// expire forgets the entries older than the TTL.
func (t *jobTable) expire(now int64) {
	for {
		k, e, ok := t.t.Oldest()
		if !ok || now-e.created < t.ttl {
			return
		}
		t.t.Delete(k)
	}
}

// encode writes the table, oldest first.
func (t *jobTable) encode(w *state.Writer) {
	w.U(uint64(t.t.Len()))
	t.t.Range(func(k [16]byte, je *jobEntry) bool {
		w.Trace(k)
		w.I(je.created)
		w.U(uint64(je.count))
		w.U(uint64(len(je.roots)))
		for _, r := range je.roots {
			w.Trace(r.Trace)
			w.Span(r.Span)
		}
		return true
	})
}

// restore reads what encode wrote into an empty table.
func (t *jobTable) restore(r *state.Reader) {
	for range r.Count() {
		k := r.Trace()
		je := &jobEntry{created: r.I(), count: int(r.U())}
		je.roots = make([]RootRef, r.Count())
		for j := range je.roots {
			je.roots[j] = RootRef{Trace: r.Trace(), Span: r.Span()}
		}
		t.t.Append(k, je)
	}
}
