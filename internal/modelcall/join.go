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
// one kind. A capture line holds no span id: a line whose response id is a
// call's nemo.gym.model_request.id joins that call; the others join, in
// time order, the unjoined call they overlap most. With inOrder, when lines
// and calls are left over in equal numbers (clocks apart), they join in
// order: the viewer, which sees a whole rollout, does that; the processor,
// which sees calls as they come, does not (a call still to come would lose
// its line). The result has one Match per line, in the order of xs.
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
	var rest []int
	for x := range xs {
		out[x] = Match{Call: -1}
		if i, ok := byRequestID[xs[x].ResponseID]; ok && xs[x].ResponseID != "" && !taken[i] {
			join(x, i, ByResponseID)
			continue
		}
		rest = append(rest, x)
	}
	sort.SliceStable(rest, func(i, j int) bool { return xs[rest[i]].Start < xs[rest[j]].Start })
	var left []int
	for _, x := range rest {
		bestI, bestOverlap := -1, int64(0)
		for i, c := range calls {
			if taken[i] {
				continue
			}
			if o := min(xs[x].End, c.End) - max(xs[x].Start, c.Start); o > bestOverlap {
				bestI, bestOverlap = i, o
			}
		}
		if bestI < 0 {
			left = append(left, x)
			continue
		}
		join(x, bestI, ByTime)
	}
	if !inOrder {
		return out
	}
	var free []int
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
