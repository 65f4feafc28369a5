// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"slices"
	"time"
)

// liveRow is what a row of the rollout list gains from the live state
// (every field omitted when empty).
type liveRow struct {
	CaptureOnly  bool     `json:"capture_only,omitempty"`
	InputTokens  *int64   `json:"input_tokens,omitempty"`
	OutputTokens *int64   `json:"output_tokens,omitempty"`
	ModelMS      *float64 `json:"model_ms,omitempty"` // its model calls' latency, summed
	Stalled      *stall   `json:"stalled,omitempty"`
}

// livePage is what a run's rollout list gains: its capture-only rollouts
// (the page's banner) and its stalled rollouts, listed first.
type livePage struct {
	NoSpans        int       `json:"no_spans,omitempty"`
	Stalled        []listRow `json:"stalled,omitempty"` // longest idle first
	StalledAfterMS float64   `json:"stalled_after_ms,omitempty"`
}

// liveRollout is what a rollout's page gains.
type liveRollout struct {
	CaptureOnly bool   `json:"capture_only,omitempty"`
	Stalled     *stall `json:"stalled,omitempty"`
}

// stallDetail caches where a stalled rollout was last seen, until one of
// its files grows (or, while its run's model server is not known, until
// another rollout of the run completes).
type stallDetail struct {
	spansSize, captureSize int64
	indexGen               uint64 // when the run's model server was not known yet; 0 once it is
	seen, waits            place
}

// inFlightRows are run's rows that have no rollouts.jsonl line: the spans
// files of the directory scan and, in the run without an id, the
// capture-only rollouts. Callers hold h.mu.
func (h *Handler) inFlightRows(run string) []*rollout {
	rows := h.scan.inFlight(run, h.index)
	if run == "" {
		rows = append(rows, h.live.captureOnly()...)
	}
	return rows
}

// stallOf is r's stall, or nil when r is not in flight or showed life
// within the threshold. Callers hold h.mu.
func (h *Handler) stallOf(r *rollout, now time.Time) *stall {
	if h.opts.StalledAfter <= 0 || !r.InFlight {
		return nil
	}
	life := h.live.lastLife(r)
	if life == 0 || now.Sub(time.Unix(0, life)) < h.opts.StalledAfter {
		return nil
	}
	st := &stall{IdleMS: float64(now.Sub(time.Unix(0, life)).Microseconds()) / 1000, At: rfc3339(life)}
	d := h.stallDetail(r)
	st.Seen, st.WaitsOn = d.seen, d.waits
	return st
}

// stallDetail reads r's files once each time they grew: a stalled rollout
// is rare, and its files are those of one rollout in flight.
func (h *Handler) stallDetail(r *rollout) *stallDetail {
	var spansSize, captureSize int64
	var tools []string
	if c := h.live.captures[r.ID]; c != nil && r.CaptureOnly {
		captureSize, tools = c.size, c.tools
	} else if s := h.live.spans[r.ID]; s != nil {
		spansSize, captureSize = s.size, s.captureSize
	}
	if d := h.live.details[r.ID]; d != nil && d.spansSize == spansSize && d.captureSize == captureSize &&
		(d.indexGen == 0 || d.indexGen == h.index.gen) {
		return d
	}
	var spans []*viewSpan
	if !r.CaptureOnly {
		name, _ := rolloutFile(r.ID, spansSuffix)
		var other int
		spans, _, _ = h.readSpans(name, r.Run, &other)
	}
	name, _ := rolloutFile(r.ID, captureSuffix)
	xs, _ := h.readCaptures(name)
	if !r.CaptureOnly {
		tools = lastTools(h.dir, name)
	}
	d := &stallDetail{spansSize: spansSize, captureSize: captureSize}
	d.seen, d.waits = describeStall(spans, xs, tools, func() (string, string) {
		server, route := h.runModel(r.Run)
		if server == "" {
			d.indexGen = h.index.gen // read again once another rollout of the run completed
		}
		return server, route
	})
	h.live.details[r.ID] = d
	return d
}

// fillLiveRow sets what row gains from the live state. Callers hold h.mu.
func (h *Handler) fillLiveRow(r *rollout, now time.Time, row *liveRow) {
	row.Stalled = h.stallOf(r, now)
	if !r.CaptureOnly {
		return
	}
	row.CaptureOnly = true
	if c := h.live.captures[r.ID]; c != nil && c.read {
		if c.tokens {
			in, out := c.inTok, c.outTok
			row.InputTokens, row.OutputTokens = &in, &out
		}
		ms := c.latencyMS
		row.ModelMS = &ms
	}
}

// livePage is run's capture-only count and stalled rows. Callers hold h.mu;
// the stalled rows' files are counted by the caller, outside the lock.
func (h *Handler) livePage(run string, now time.Time) livePage {
	var p livePage
	if h.opts.StalledAfter > 0 {
		p.StalledAfterMS = float64(h.opts.StalledAfter.Milliseconds())
	}
	for _, r := range h.inFlightRows(run) {
		if r.CaptureOnly {
			p.NoSpans++
		}
		if r.InFlight && h.stallOf(r, now) != nil {
			p.Stalled = append(p.Stalled, h.listRow(r, now, false))
		}
	}
	slices.SortFunc(p.Stalled, func(a, b listRow) int {
		if c := cmp.Compare(b.Stalled.IdleMS, a.Stalled.IdleMS); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return p
}

// liveRuns adds the capture-only rollouts (to the run without an id) and
// the stalled rollouts to the runs page. Callers hold h.mu.
func (h *Handler) liveRuns(page *runsPage, get func(run string) *runRow, note func(run string, start, end int64), now time.Time) {
	for _, x := range h.live.captureOnly() {
		r := get("")
		r.NoSpans++
		page.NoSpans++
		if x.InFlight {
			r.InFlight++
		} else {
			r.Rollouts++
			if x.failed() {
				r.Failed++
			}
		}
		note("", x.Start, x.End)
	}
	h.eachInFlight(func(x *rollout) {
		if h.stallOf(x, now) != nil {
			get(x.Run).Stalled++
		}
	})
}

// liveRolloutOf fills what a rollout's page gains and reports whether the
// rollout is in flight (one without a rollouts.jsonl line always is, but a
// capture-only rollout whose last exchange asked for no tool). Callers hold
// h.mu.
func (h *Handler) liveRolloutOf(id, run string, unlisted bool, p *liveRollout) bool {
	if !unlisted {
		return false
	}
	if c := h.live.captures[id]; c != nil && run == "" {
		p.CaptureOnly = true
		p.Stalled = h.stallOf(c.row, h.now())
		return c.row.InFlight
	}
	if r := h.scan.flight[id]; r != nil && r.Run == run {
		p.Stalled = h.stallOf(r, h.now())
	}
	return true
}

// maxModelProbes bounds the completed rollouts of a run read to learn its
// model server.
const maxModelProbes = 3

// runModel is the model server and route of run, from the model calls of
// its latest completed rollouts (read once a run, when a stalled rollout's
// own files do not name them). Callers hold h.mu.
func (h *Handler) runModel(run string) (string, string) {
	if m, ok := h.live.runModels[run]; ok {
		return m.server, m.route
	}
	rows := h.index.byRun[run]
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-maxModelProbes; i-- {
		name, ok := rolloutFile(rows[i].ID, spansSuffix)
		if !ok {
			continue
		}
		var other int
		spans, _, err := h.readSpans(name, run, &other)
		if err != nil {
			continue
		}
		var m modelOf
		for _, s := range markModelCalls(spans) {
			c := callOf(s)
			m.note(c.server, c.route, s.Kind == "SERVER")
		}
		if m.server != "" {
			h.live.runModels[run] = m
			return m.server, m.route
		}
	}
	return "", ""
}
