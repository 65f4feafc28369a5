// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// rootKey names a rollout within a run (K, rollout id).
type rootKey struct{ k, rollout string }

// rootTable remembers recent rollout roots by (K, rollout id) so that a
// retried attempt can link to the previous one; of several roots of one
// rollout (fragments) it keeps the smallest span id. Bounded by
// split.max_tracked_roots in total, oldest first out.
type rootTable struct {
	t *bounded.Table[rootKey, RootRef]
}

func newRootTable(capacity int) rootTable {
	return rootTable{t: bounded.New[rootKey, RootRef](capacity)}
}

func (t *rootTable) put(k, rollout string, ref RootRef) {
	key := rootKey{k, rollout}
	if old, ok := t.t.Get(key); ok && old.less(ref) {
		return // a rollout with several roots is known by its smallest
	}
	t.t.Put(key, ref)
}

func (t *rootTable) get(k, rollout string) (RootRef, bool) {
	return t.t.Get(rootKey{k, rollout})
}

// encode writes the table, oldest first.
func (t *rootTable) encode(w *state.Writer) {
	w.U(uint64(t.t.Len()))
	t.t.Range(func(k rootKey, r RootRef) bool {
		w.Str(k.k)
		w.Str(k.rollout)
		w.Trace(r.Trace)
		w.Span(r.Span)
		return true
	})
}

// restore reads what encode wrote into an empty table.
func (t *rootTable) restore(r *state.Reader) {
	for range r.Count() {
		k := rootKey{k: r.Str(), rollout: r.Str()}
		t.t.Append(k, RootRef{Trace: r.Trace(), Span: r.Span()})
	}
}
