// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import "sort"

// Call is a model-call span as the join sees it: its
// nemo.gym.model_request.id ("" when it has none) and its start and end in
// unix nanoseconds.
type Call struct {
	RequestID  string
	Start, End int64
}

// Exchange is a capture line as the join sees it: its response's id and its
// started_at and completed_at in unix nanoseconds.
type Exchange struct {
	ResponseID string
	Start, End int64
}

// capturePrecision is the precision of a capture line's times (Gym's
// time.time(), written with microseconds): a line's window is widened by it
// on each side, so that a call of a few microseconds that the rounding put
// just outside its line still overlaps it.
const capturePrecision = 1000 // ns

// How a capture line was joined.
const (
	ByResponseID = "response_id"
	ByTime       = "time"
)

// Match says which call a capture line joined (-1: none) and how.
type Match struct {
	Call int
	How  string
}

// Join joins each capture line of one rollout to one of its model calls of
// one kind. A capture line holds no span id:
//  1. a line whose response id is a call's nemo.gym.model_request.id joins
//     that call;
//  2. the others join by time (a line's window widened by its precision,
//     capturePrecision): of the pairs of an unjoined line and an
//     unjoined call that overlap, the pair that overlaps most joins first
//     (ties: the earlier line, then the earlier call), then the next, until
//     none is left. A line and a call that both have ids, different ones,
//     never join by time. Most-overlap-first makes the join the same
//     whether it sees every call at once (the viewer) or the calls one by
//     one as they come (the processor): a call that has come never takes
//     the line of a concurrent call still to come while its own is there,
//     and a caller's span that covers a retried call's attempts joins the
//     attempt it covers most, the retry that answered;
//  3. with inOrder, when lines and calls are left over in equal numbers
//     (clocks apart), they join in order. The viewer, which sees a whole
//     rollout, does that; the processor does not (a call still to come
//     would lose its line).
//
// The result has one Match per line, in the order of xs.
func Join(calls []Call, xs []Exchange, inOrder bool) []Match {
	out := make([]Match, len(xs))
	byRequestID := map[string]int{}
	for i, c := range calls {
		if c.RequestID != "" {
			byRequestID[c.RequestID] = i
		}
	}
	taken := make([]bool, len(calls))
	join := func(x, i int, how string) {
		taken[i] = true
		out[x] = Match{Call: i, How: how}
	}
	type pair struct {
		x, call int
		overlap int64
	}
	var rest []int
	for x := range xs {
		out[x] = Match{Call: -1}
		if i, ok := byRequestID[xs[x].ResponseID]; ok && xs[x].ResponseID != "" && !taken[i] {
			join(x, i, ByResponseID)
			continue
		}
		rest = append(rest, x)
	}
	var pairs []pair
	for _, x := range rest {
		for i, c := range calls {
			if taken[i] || (c.RequestID != "" && xs[x].ResponseID != "") {
				continue
			}
			if o := min(xs[x].End+capturePrecision, c.End) - max(xs[x].Start-capturePrecision, c.Start); o > 0 {
				pairs = append(pairs, pair{x, i, o})
			}
		}
	}
	sort.Slice(pairs, func(a, b int) bool {
		pa, pb := pairs[a], pairs[b]
		if pa.overlap != pb.overlap {
			return pa.overlap > pb.overlap
		}
		if xa, xb := xs[pa.x].Start, xs[pb.x].Start; xa != xb {
			return xa < xb
		}
		if pa.x != pb.x {
			return pa.x < pb.x
		}
		return pa.call < pb.call
	})
	for _, p := range pairs {
		if out[p.x].Call < 0 && !taken[p.call] {
			join(p.x, p.call, ByTime)
		}
	}
	if !inOrder {
		return out
	}
	var left, free []int
	for _, x := range rest {
		if out[x].Call < 0 {
			left = append(left, x)
		}
	}
	sort.SliceStable(left, func(a, b int) bool { return xs[left[a]].Start < xs[left[b]].Start })
	for i := range calls {
		if !taken[i] {
			free = append(free, i)
		}
	}
	if len(free) == len(left) {
		for k, x := range left {
			join(x, free[k], ByTime)
		}
	}
	return out
}
