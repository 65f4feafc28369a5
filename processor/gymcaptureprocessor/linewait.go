// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"slices"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// Whether a model-call span that finds no line waits for it (design §4.7).
// Gym's capture middleware sends the response's headers, then writes the
// line (and fsyncs it, creating the rollout's file on its first call), then
// sends the body's last chunk. A caller's CLIENT span (aiohttp's) ends at the
// headers, so it can be exported, and come here, before its line is in the
// file: on a loaded machine the write, a file's creation most of all, takes
// longer than the span's way here. So a span does not give up on its line
// only because it ended capture_wait before it came: it waits (capture_wait
// from now, as any span) while the line may still come, that is
//   - it ended within lineHorizon capture_waits of now (a span handed on
//     again after an outage, or after a restart, ended long before: its
//     line came or never will, and it does not hold its batch up), and
//   - Gym has not written past its call: no line of its rollout began after
//     it ended (lines are written as calls end, so a later call's line
//     means this call's came, or will not), and
//   - the rollout's file is there, or Gym writes capture files into this
//     dir (one has been seen): a run that captures elsewhere, or nothing,
//     never waits, and
//   - it has not waited for its line already: a span let go without it and
//     refused downstream comes back soon, and waits once (the rollout
//     remembers its last maxWaitedCalls such calls).

// lineHorizon, in capture_waits, is how long after a span's end its line
// may still come.
const lineHorizon = 10

// maxWaitedCalls bounds the calls a rollout remembers having waited for.
const maxWaitedCalls = 64

// lineMayCome reports whether w's line may still come (above), at now.
func (p *captureProcessor) lineMayCome(w *waitingSpan, now time.Time) bool {
	end := w.span.EndTimestamp().AsTime()
	if now.Sub(end) > lineHorizon*p.cfg.CaptureWait {
		return false
	}
	r := w.rollout
	if r.waited(call(w.span)) {
		return false
	}
	if !r.tail.exists {
		return p.capturesHere
	}
	for _, l := range r.lines {
		if l.line.Start > int64(w.span.EndTimestamp()) {
			return false
		}
	}
	return true
}

// waited reports whether a span of call c has waited for its line and left
// without it.
func (r *rolloutState) waited(c modelcall.Call) bool {
	return slices.ContainsFunc(r.waitedCalls, func(d modelcall.Call) bool { return d.Start == c.Start && d.End == c.End })
}

// noteWaited remembers that a span of call c waited for its line and left
// without it, forgetting the oldest past maxWaitedCalls.
func (r *rolloutState) noteWaited(c modelcall.Call) {
	if len(r.waitedCalls) == maxWaitedCalls {
		r.waitedCalls = slices.Delete(r.waitedCalls, 0, 1)
	}
	r.waitedCalls = append(r.waitedCalls, c)
}
