// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// A re-dispatched attempt's root links to its previous attempt's root
// (design §4.3). When the previous root is not known yet (after an outage a
// sender's retries can bring it after its successor's), the root waits for
// it, at most wait (pending.go, previousAttemptRoot), and leaves without the
// link, counted, when it does not come.

// holdForPreviousAttempt makes the decided root n wait for the root of
// rollout prev under K k.
func (e *engine) holdForPreviousAttempt(n *node, k, prev string) {
	key := tidKey{k, prev}
	e.attemptWait[key] = append(e.attemptWait[key], n)
	e.setDeadline(n.held, phaseAttempt, e.dl.previousAttemptRoot(e.now))
}

// previousAttemptArrived lets the roots waiting for rollout's root under K
// k leave, linked to it.
func (e *engine) previousAttemptArrived(k, rollout string) {
	key := tidKey{k, rollout}
	ws, ok := e.attemptWait[key]
	if !ok {
		return
	}
	delete(e.attemptWait, key)
	ref, _ := e.roots.get(k, rollout)
	for _, w := range ws {
		if hs := w.held; hs != nil && hs.phase == phaseAttempt {
			hs.prev, hs.hasPrev = ref, true
			e.emit(w)
		}
	}
}

// dropAttemptWaiter forgets the waiting root n, which leaves without its
// link.
func (e *engine) dropAttemptWaiter(n *node) {
	prev, _ := previousAttempt(n.rollout)
	key := tidKey{rolloutKey(n.held.origin.info.run.id, n.key.trace), prev}
	ws := e.attemptWait[key]
	for i, w := range ws {
		if w == n {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(e.attemptWait, key)
	} else {
		e.attemptWait[key] = ws
	}
}

// restoreAttemptWaiters rebuilds, after a checkpoint is read, the table of
// roots waiting for their previous attempt from the held spans.
func (e *engine) restoreAttemptWaiters() {
	for _, hs := range e.heap {
		if hs.phase != phaseAttempt {
			continue
		}
		n := hs.n
		if prev, ok := previousAttempt(n.rollout); ok {
			key := tidKey{rolloutKey(hs.origin.info.run.id, n.key.trace), prev}
			e.attemptWait[key] = append(e.attemptWait[key], n)
		}
	}
}
