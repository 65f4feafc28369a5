// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import "time"

// A rollout page shows one dispatch of a rollout id (issue #53, item 3).
// Gym's rollout ids repeat in every run, and Gym clears <id>.capture.jsonl
// before it dispatches an id again, so the capture file beside an earlier
// run's spans holds a later run's model calls. Joined by time, they showed
// on the earlier run's page as its own (TTFT and tokens of the other run,
// a duration spanning both runs). A page keeps the exchanges inside its
// spans' interval; the rest it counts and names.

// dispatchSlack is how far outside its dispatch's spans an exchange may lie
// and still be the dispatch's: the model server stamps the capture line,
// another process the spans (one host's clock, or NTP's few ms between
// hosts). A second run of an id starts minutes later (its servers start).
const dispatchSlack = 5 * time.Second

// ofThisDispatch keeps the exchanges of the dispatch whose spans are spans
// and returns how many it left out. With no span (a capture-only rollout)
// every exchange is kept; while the rollout is in flight an exchange may end
// after the last span that has arrived.
func ofThisDispatch(xs []*exchange, spans []*viewSpan, inFlight bool) (kept []*exchange, other int) {
	first, last := int64(0), int64(0)
	for _, s := range spans {
		if s.startAbs != 0 && (first == 0 || s.startAbs < first) {
			first = s.startAbs
		}
		last = max(last, s.endAbs)
	}
	if first == 0 {
		return xs, 0
	}
	lo, hi := first-int64(dispatchSlack), last+int64(dispatchSlack)
	kept = xs[:0:0]
	for _, x := range xs {
		if x.startAbs != 0 && x.startAbs < lo || !inFlight && x.endAbs > hi {
			other++
			continue
		}
		kept = append(kept, x)
	}
	return kept, other
}
