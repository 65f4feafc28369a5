// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"slices"
	"strings"
)

// The rollout list's columns of why a rollout went as it did: where its
// time went (timesplit.go) and what Gym's output says of it (gympage.go),
// as sort keys, filters and fields of a row.

// rewardSort sorts by Gym's reward; <category>_ms by a category of the
// split.
const rewardSort = "reward"

func isWhySort(by string) bool {
	if by == rewardSort {
		return true
	}
	c, ok := strings.CutSuffix(by, "_ms")
	return ok && slices.Contains(splitCategories[:], c)
}

// whyValue is what a rollout sorts by under a why sort key; false when it
// has none. Callers hold h.mu.
func (h *Handler) whyValue(by string) func(r *rollout) (float64, bool) {
	if by == rewardSort {
		return func(r *rollout) (float64, bool) {
			if !h.gymJoins(r) {
				return 0, false
			}
			if g, _ := h.gym.lookup(r.ID); g != nil && g.Reward != nil {
				return *g.Reward, true
			}
			return 0, false
		}
	}
	c, _ := strings.CutSuffix(by, "_ms")
	i := slices.Index(splitCategories[:], c)
	return func(r *rollout) (float64, bool) {
		if r.Split == nil {
			return 0, false
		}
		return r.Split.ms[i], true
	}
}

// byValue orders rows by value; rows without one go last in either
// direction (absent, compared before the direction is applied).
func byValue(value func(*rollout) (float64, bool)) (c, absent func(a, b *rollout) int) {
	c = func(a, b *rollout) int {
		x, _ := value(a)
		y, _ := value(b)
		return cmp.Compare(x, y)
	}
	absent = func(a, b *rollout) int {
		_, okA := value(a)
		_, okB := value(b)
		switch {
		case okA == okB:
			return 0
		case okA:
			return -1
		}
		return 1
	}
	return c, absent
}

// whyFilter is the filter of Gym's failed or unhealthy rollouts (nil: no
// filter). Callers hold h.mu.
func (h *Handler) whyFilter(gymFailed, unhealthy bool) func(*rollout) bool {
	if !gymFailed && !unhealthy {
		return nil
	}
	return func(r *rollout) bool {
		return h.gymJoins(r) && (!gymFailed || h.gym.failed(r.ID)) && (!unhealthy || h.gym.unhealthy(r.ID))
	}
}

// whyFields fills a row's split and Gym's result. Callers hold h.mu.
func (h *Handler) whyFields(row *listRow, r *rollout) {
	if r.Split != nil {
		ms := r.Split.ms
		row.TimeSplitMS = &ms
	}
	row.Gym = h.gymResultLocked(r)
}

// gymGen changes whenever Gym's output changed. Callers hold h.mu.
func (h *Handler) gymGen() uint64 {
	if h.gym == nil {
		return 0
	}
	return h.gym.gen
}
