// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// deadlines are the rules of how long the core keeps what it holds, one
// function a rule (design §4.2–§4.5). The core asks them; it never adds a
// duration to a time itself. Times are unix nanoseconds.
//
// How long a span waits depends only on what it still needs, for every
// sender alike: settle (the spans below it, sent by other processes' batch
// span processors), wait (what can still come to a root: its descendants
// end before it), rollout_wait (a parent that is still open: the agent's
// POST /run while an hour-long rollout runs).
//
// A restart (Core.Restarted) changes two rules for wait after it: the
// senders retry, with backoff, what the stopped collector had not
// acknowledged, so the spans below a span can come after its settle even
// though they ended before it (undecidedRelease), and a root's parent can
// come after the root's wait (rootCut).
type deadlines struct {
	settle, wait, rolloutWait int64
	// restartWait is when the wait after the latest restart ends (its time
	// plus wait); 0 before any restart.
	restartWait int64
}

// upwardDecision is when an undecided span's upward decision is taken
// (PhaseSettle): settle after it arrived, so that the spans below it, sent
// by other processes' batch span processors, have arrived too.
func (d deadlines) upwardDecision(arrival int64) int64 { return arrival + d.settle }

// undecidedRelease is when an undecided span whose upward decision found
// nothing below it leaves in no rollout (PhaseRelease), unless a rollout
// comes down to it first (§4.2):
//   - a root waits wait: its descendants end before it, so little can
//     still come below it;
//   - a span whose parent left in no rollout leaves now: nothing can come
//     down to it any more, and its settle let the spans below it come;
//     within wait after a restart, it waits until then: the spans below
//     it may be in a sender's retry (a root waits wait anyway);
//   - any other span waits for its parent, at most rollout_wait: a parent
//     ends after its child, so a missing parent is still open (the agent's
//     or environment server's POST /run while its rollout runs), and an
//     undecided one decides within its own wait; the child then leaves with
//     the parent's decision (notifyWaiters).
func (d deadlines) undecidedRelease(e *entry, now int64) int64 {
	switch p := e.n.parent; {
	case p == nil:
		return e.arrival + d.wait
	case p.how == HowNone:
		return max(now, d.restartWait)
	default:
		return e.arrival + d.rolloutWait
	}
}

// rootCut is when a rollout root decided upward whose parent has not
// arrived is cut from it (PhaseCut): wait after the root arrived. A parent
// in the root's own rollout would have ended after the root and arrived by
// then, unless a restart came between: the parent may then be in a
// sender's retry, and the root waits, when later, until the wait after the
// restart ends. A root that was waiting when the restart came is given the
// later time when its first one passes (expire).
func (d deadlines) rootCut(arrival int64) int64 { return max(arrival+d.wait, d.restartWait) }

// previousAttemptRoot is when a re-dispatched attempt's root, decided now
// before its previous attempt's root was seen, looks for it again and
// leaves, linked or not (HoldPreviousAttempt, §4.3): wait later. After an
// outage a sender's retries can bring the previous attempt's spans after
// its successor's.
func (d deadlines) previousAttemptRoot(now int64) int64 { return now + d.wait }

// jobSettle is when a job span stops waiting for its trace's spans to
// arrive (PhaseJob, first part): settle after it arrived.
func (d deadlines) jobSettle(arrival int64) int64 { return arrival + d.settle }

// jobLinks is the latest a settled job span waits for the rest of its trace
// to leave, so that it links every root cut from it: wait after it arrived,
// or, when later, until the wait after a restart ends (its children then
// wait that long for the spans below them: undecidedRelease).
func (d deadlines) jobLinks(arrival int64) int64 { return max(arrival+d.wait, d.restartWait) }

// rolloutParent is the latest a parentless SERVER span with direct evidence
// waits for its rollout's gym.rollout to leave, to hang below it
// (HoldRolloutParent, §4.4): rollout_wait, the length of a rollout.
func (d deadlines) rolloutParent(arrival int64) int64 { return arrival + d.rolloutWait }

// peerWait is the latest a decided CLIENT span whose host:port is not yet
// known waits for a SERVER span that tells its service (HoldPeer, §4.4):
// settle, the time the SERVER span takes to arrive from its own process.
func (d deadlines) peerWait(arrival int64) int64 { return arrival + d.settle }

// indexKeptAfter is the oldest time at which an index entry of a span that
// left (or of a parent that never arrived) is still kept: wait before now.
// A late child arrives within its parent's process's batch delay, far less.
func (d deadlines) indexKeptAfter(now int64) int64 { return now - d.wait }

// noEvidenceCheck is when the no-evidence diagnostic looks at a run: wait
// after its first span (runs.go, checkRuns).
func (d deadlines) noEvidenceCheck(run *Run) int64 { return run.firstSeen + d.wait }

// releaseReason is the reason an undecided span leaves in no rollout when
// its PhaseRelease deadline passes: its parent never arrived
// (parent_missing), its parent left in no rollout (parent_none), else its
// wait ran out; at shutdown, always shutdown.
func releaseReason(n *Node, relReason Reason) Reason {
	switch p := n.parent; {
	case relReason != ReasonWait || p == nil:
		return relReason
	case p.state == stAbsent:
		return ReasonParentMissing
	case p.how == HowNone:
		return ReasonParentNone
	default:
		return ReasonWait
	}
}
