// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"slices"
	"time"
)

// runRow is one run on the runs page: from rollouts.jsonl, the rollouts in
// flight and service_map.json.
type runRow struct {
	Run        string  `json:"run"`
	Rollouts   int     `json:"rollouts"`
	Failed     int     `json:"failed"`
	InFlight   int     `json:"in_flight"`
	Start      string  `json:"start,omitempty"` // first rollout start, RFC 3339 UTC
	End        string  `json:"end,omitempty"`   // last rollout end
	DurationMS float64 `json:"duration_ms"`
	// NotKept: rollouts of the run (counted in Rollouts and Failed) whose
	// rows the viewer no longer keeps (Options.MaxRollouts).
	NotKept int    `json:"not_kept,omitempty"`
	Edges   int    `json:"edges"` // service-map edges of the run
	Calls   uint64 `json:"calls"` // calls on them

	// Capture-only and stalled rollouts (livepage.go).
	NoSpans int `json:"no_spans,omitempty"`
	Stalled int `json:"stalled,omitempty"`

	startNS int64
}

// runsPage is the answer of /api/runs.
type runsPage struct {
	Runs      []runRow `json:"runs"`
	Malformed int      `json:"malformed,omitempty"` // unreadable rollouts.jsonl lines
	MapError  string   `json:"map_error,omitempty"`
	// MaxRollouts is the rows the viewer keeps, when some run has rows it
	// no longer keeps.
	MaxRollouts int `json:"max_rollouts,omitempty"`
	NoSpans     int `json:"no_spans,omitempty"` // capture-only rollouts (livepage.go)
	// RepeatedID is a rollout id of two runs (RepeatedRuns) in this capture
	// dir: the runs share its files' names (index.go).
	RepeatedID   string   `json:"repeated_id,omitempty"`
	RepeatedRuns []string `json:"repeated_runs,omitempty"`
}

func (h *Handler) runs() runsPage {
	edges, mapErr := h.serviceMap()
	h.mu.Lock()
	h.refreshLocked()
	byRun := map[string]*runRow{}
	var start, end = map[string]int64{}, map[string]int64{}
	get := func(run string) *runRow {
		r := byRun[run]
		if r == nil {
			r = &runRow{Run: run}
			byRun[run] = r
		}
		return r
	}
	note := func(run string, s, e int64) {
		if s != 0 && (start[run] == 0 || s < start[run]) {
			start[run] = s
		}
		end[run] = max(end[run], e)
	}
	for run, rows := range h.index.byRun {
		r := get(run)
		for _, x := range rows {
			r.Rollouts++
			if x.failed() {
				r.Failed++
			}
			note(run, x.Start, x.End)
		}
	}
	for run, nk := range h.index.notKept {
		r := get(run)
		r.Rollouts += nk.Rollouts
		r.Failed += nk.Failed
		r.NotKept = nk.Rollouts
		note(run, nk.Start, nk.End)
	}
	for id, x := range h.scan.flight {
		if done := h.index.done(id); done {
			continue
		}
		if _, ok := h.scan.ids[id]; !ok {
			continue
		}
		r := get(x.Run)
		r.InFlight++
		note(x.Run, x.Start, 0)
	}
	page := runsPage{Malformed: h.index.malformed}
	if h.index.repeated != "" {
		page.RepeatedID, page.RepeatedRuns = h.index.repeated, h.index.repeatedRuns[:]
	}
	if len(h.index.notKept) > 0 {
		page.MaxRollouts = h.index.max
	}
	h.liveRuns(&page, get, note, h.now())
	h.mu.Unlock()
	for run, es := range edges {
		r := get(run)
		r.Edges = len(es)
		for _, e := range es {
			r.Calls += e.Calls
		}
	}
	if mapErr != nil {
		page.MapError = mapErr.Error()
	}
	for run, r := range byRun {
		if s := start[run]; s != 0 {
			r.startNS = s
			r.Start = time.Unix(0, s).UTC().Format(time.RFC3339Nano)
			if e := end[run]; e > s {
				r.End = time.Unix(0, e).UTC().Format(time.RFC3339Nano)
				r.DurationMS = float64((e-s)/1000) / 1000
			}
		}
		page.Runs = append(page.Runs, *r)
	}
	// The latest run first.
	slices.SortFunc(page.Runs, func(a, b runRow) int {
		if c := cmp.Compare(b.startNS, a.startNS); c != 0 {
			return c
		}
		return cmp.Compare(a.Run, b.Run)
	})
	if page.Runs == nil {
		page.Runs = []runRow{}
	}
	return page
}
