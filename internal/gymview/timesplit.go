// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// splitCategories are the categories of a rollout's time (the gymspans
// exporter's time_split_ms), in the order the viewer shows them.
var splitCategories = [numCategories]string{"model", "tools", "verify", "agent", "queue", "other"}

const numCategories = 6

// splitMS is where a finished rollout's time went: the
// milliseconds of each category, in splitCategories' order, from the
// time_split_ms member of its rollouts.jsonl line.
type splitMS [numCategories]float64

// MarshalJSON writes the split as gymspans does: {"model": ms, ...}.
func (s splitMS) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, splitCategories[i])
		b = append(b, ':')
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the split as gymspans writes it.
func (s *splitMS) UnmarshalJSON(b []byte) error {
	ms, _, ok := parseSplit(b)
	if !ok {
		return fmt.Errorf("not a time split: %.100s", b)
	}
	*s = ms
	return nil
}

// rolloutSplit is the split a rollout's row shows: with several roots (and
// so several lines), the split of the longest root that has one.
type rolloutSplit struct {
	ms     splitMS
	rootNS int64
}

// noteSplit keeps the split of a rollouts.jsonl line on its row. A line
// without one leaves the row as it is; a split that is not six finite
// numbers >= 0 is counted and not shown.
func (ix *rolloutIndex) noteSplit(r *rollout, raw json.RawMessage, start, end int64) {
	ms, present, ok := parseSplit(raw)
	switch {
	case !present:
	case !ok:
		ix.badSplits++
	case r.Split == nil || end-start >= r.Split.rootNS:
		r.Split = &rolloutSplit{ms: ms, rootNS: end - start}
	}
}

// parseSplit reads the time_split_ms member of a rollouts.jsonl line
// (CONTRACT: all six categories, each >= 0). present is false when the
// line has none (or null).
func parseSplit(raw json.RawMessage) (ms splitMS, present, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return ms, false, true
	}
	seen := 0
	set := func(key, val []byte, isString bool) bool {
		i := slices.Index(splitCategories[:], string(key))
		if i < 0 {
			return true // a category this viewer does not know
		}
		if isString {
			return false
		}
		v, err := strconv.ParseFloat(string(val), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
		seen |= 1 << i
		ms[i] = v
		return true
	}
	if !decodeFlat(raw, set) {
		// Escapes in its names, or not an object of numbers.
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return ms, true, false
		}
		for k, v := range m {
			if !set([]byte(k), v, len(v) > 0 && v[0] == '"') {
				return ms, true, false
			}
		}
	}
	return ms, true, seen == 1<<numCategories-1
}

// categoryStats is one category over a run's rollouts with a split.
type categoryStats struct {
	Name    string  `json:"name"`
	P50MS   float64 `json:"p50_ms"`
	P90MS   float64 `json:"p90_ms"`
	MaxMS   float64 `json:"max_ms"`
	TotalMS float64 `json:"total_ms"`
	Share   float64 `json:"share"` // of the time of every category together
}

// splitStats is the answer of /api/timesplit: p50, p90 and max of each
// category over a run's finished rollouts that have a split.
type splitStats struct {
	Run        string          `json:"run"`
	Finished   int             `json:"finished"`   // rollouts of the run in rollouts.jsonl
	WithSplit  int             `json:"with_split"` // of them, with a split
	Malformed  int             `json:"malformed,omitempty"`
	Categories []categoryStats `json:"categories"`

	gen uint64
}

// maxSplitCache bounds the runs whose stats are kept.
const maxSplitCache = 16

// runSplit answers /api/timesplit, from a cache kept while rollouts.jsonl
// did not change.
func (h *Handler) runSplit(run string) *splitStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshLocked()
	if s := h.splits[run]; s != nil && s.gen == h.index.gen {
		return s
	}
	s := computeSplitStats(run, h.index.byRun[run])
	s.gen, s.Malformed = h.index.gen, h.index.badSplits
	if len(h.splits) >= maxSplitCache {
		clear(h.splits)
	}
	h.splits[run] = s
	return s
}

// computeSplitStats: nearest-rank percentiles of each category.
func computeSplitStats(run string, rows []*rollout) *splitStats {
	s := &splitStats{Run: run, Finished: len(rows), Categories: []categoryStats{}}
	var cols [numCategories][]float64
	for _, r := range rows {
		if r.Split == nil {
			continue
		}
		s.WithSplit++
		for i, v := range r.Split.ms {
			cols[i] = append(cols[i], v)
		}
	}
	if s.WithSplit == 0 {
		return s
	}
	all := 0.0
	for i := range cols {
		slices.Sort(cols[i])
		c := categoryStats{Name: splitCategories[i], P50MS: nearestRank(cols[i], 0.5), P90MS: nearestRank(cols[i], 0.9), MaxMS: cols[i][len(cols[i])-1]}
		for _, v := range cols[i] {
			c.TotalMS += v
		}
		all += c.TotalMS
		s.Categories = append(s.Categories, c)
	}
	for i := range s.Categories {
		if all > 0 {
			s.Categories[i].Share = s.Categories[i].TotalMS / all
		}
	}
	return s
}

// nearestRank is the p-quantile of sorted values: the smallest value with
// at least p of them at or below it.
func nearestRank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
