// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Paging bounds of /api/rollouts.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// listRow is one row of a run's rollout list.
type listRow struct {
	ID         string  `json:"id"`
	Run        string  `json:"run"`
	TraceID    string  `json:"trace_id,omitempty"`
	Start      string  `json:"start,omitempty"` // RFC 3339 UTC
	DurationMS float64 `json:"duration_ms"`
	Status     string  `json:"status"` // OK, ERROR, UNSET, or "" in flight
	Errors     int     `json:"errors"`
	Failed     bool    `json:"failed"`
	Roots      int     `json:"roots"`
	Spans      int     `json:"spans"`       // lines of its spans file; -1 without one
	ModelCalls int     `json:"model_calls"` // lines of its capture file; -1 without one
	InFlight   bool    `json:"in_flight,omitempty"`
	Service    string  `json:"service,omitempty"`
	Name       string  `json:"name,omitempty"`
	HasPage    bool    `json:"has_page"` // its id is a file name the viewer opens

	// Why it went as it did (listwhy.go).
	TimeSplitMS *splitMS   `json:"time_split_ms,omitempty"`
	Gym         *gymResult `json:"gym,omitempty"`
	liveRow                // capture-only and stalled rollouts (livepage.go)
}

// listQuery is what /api/rollouts was asked.
type listQuery struct {
	run           string
	sort          string // start, duration, errors, id; reward, <category>_ms (listwhy.go)
	desc          bool
	failed        bool
	gymFailed     bool // Gym names a failure (listwhy.go)
	unhealthy     bool // Gym's health check says unhealthy
	q             string
	offset, limit int
}

func parseListQuery(v url.Values) (listQuery, bool) {
	q := listQuery{run: v.Get("run"), sort: v.Get("sort"), q: v.Get("q"), limit: defaultPageSize}
	switch q.sort {
	case "":
		q.sort = "start"
	case "start", "duration", "errors", "id":
	default:
		if !isWhySort(q.sort) {
			return q, false
		}
	}
	switch v.Get("order") {
	case "", "desc":
		q.desc = true
	case "asc":
	default:
		return q, false
	}
	q.failed = v.Get("failed") == "1" || v.Get("failed") == "true"
	q.gymFailed, q.unhealthy = v.Get("gymfailed") == "1", v.Get("unhealthy") == "1"
	for key, p := range map[string]*int{"offset": &q.offset, "limit": &q.limit} {
		if s := v.Get(key); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return q, false
			}
			*p = n
		}
	}
	q.limit = min(max(q.limit, 1), maxPageSize)
	return q, true
}

// listPage is the answer of /api/rollouts.
type listPage struct {
	Run   string `json:"run"`
	Total int    `json:"total"` // rows that pass the filters
	All   int    `json:"all"`   // rows of the run
	// NotKept: the run's oldest rollouts, not listed, whose rows the viewer
	// no longer keeps (it keeps MaxRollouts of the capture dir).
	NotKept     int       `json:"not_kept,omitempty"`
	MaxRollouts int       `json:"max_rollouts,omitempty"`
	InFlight    int       `json:"in_flight"`
	Failed      int       `json:"failed"`
	Offset      int       `json:"offset"`
	Limit       int       `json:"limit"`
	Rows        []listRow `json:"rows"`
	livePage              // capture-only and stalled rollouts (livepage.go)
}

// orderKey names one cached sort of one run's rows.
type orderKey struct {
	run, sort string
	desc      bool
}

type order struct {
	indexGen, scanGen uint64
	gymGen, liveGen   uint64
	rows              []*rollout
	failed, inFlight  int
	filtered          map[filterKey][]*rollout // rows that pass a filter, kept as long as the order
}

type filterKey struct {
	failed               bool
	gymFailed, unhealthy bool
	q                    string
}

// filter returns o's rows that pass a filter (all of them without one);
// why is the filter of Gym's output (nil: none).
func (o *order) filter(k filterKey, why func(*rollout) bool) []*rollout {
	if !k.failed && k.q == "" && why == nil {
		return o.rows
	}
	if rows, ok := o.filtered[k]; ok {
		return rows
	}
	rows := []*rollout{}
	for _, r := range o.rows {
		if (!k.failed || r.failed()) && (k.q == "" || strings.Contains(r.ID, k.q)) && (why == nil || why(r)) {
			rows = append(rows, r)
		}
	}
	if o.filtered == nil || len(o.filtered) >= 8 {
		o.filtered = map[filterKey][]*rollout{}
	}
	o.filtered[k] = rows
	return rows
}

// sorted returns run's rows (completed and in flight) in the order asked,
// from a cache kept while neither the index nor the directory changed.
// Callers hold h.mu.
func (h *Handler) sorted(run, by string, desc bool, now time.Time) *order {
	k := orderKey{run: run, sort: by, desc: desc}
	if o := h.orders[k]; o != nil && o.indexGen == h.index.gen && o.scanGen == h.scan.gen && o.gymGen == h.gymGen() && o.liveGen == h.live.gen {
		return o
	}
	done := h.index.byRun[run]
	flight := h.inFlightRows(run)
	rows := make([]*rollout, 0, len(done)+len(flight))
	rows = append(rows, done...)
	rows = append(rows, flight...)
	var c, absent func(a, b *rollout) int // absent: rows without a value last
	switch by {
	case "duration":
		c = func(a, b *rollout) int { return cmp.Compare(a.duration(now), b.duration(now)) }
	case "errors":
		c = func(a, b *rollout) int { return cmp.Compare(a.Errors, b.Errors) }
	case "id":
		c = func(a, b *rollout) int { return cmp.Compare(a.ID, b.ID) }
	default:
		if isWhySort(by) {
			c, absent = byValue(h.whyValue(by))
			break
		}
		c = func(a, b *rollout) int { return cmp.Compare(a.Start, b.Start) }
	}
	slices.SortStableFunc(rows, func(a, b *rollout) int {
		if absent != nil {
			if r := absent(a, b); r != 0 {
				return r
			}
		}
		r := c(a, b)
		if r == 0 {
			r = cmp.Compare(a.ID, b.ID) // a stable page order
		}
		if desc {
			return -r
		}
		return r
	})
	o := &order{indexGen: h.index.gen, scanGen: h.scan.gen, gymGen: h.gymGen(), liveGen: h.live.gen, rows: rows}
	for _, r := range rows {
		if r.failed() {
			o.failed++
		}
		if r.InFlight {
			o.inFlight++
		}
	}
	if len(h.orders) >= 16 {
		clear(h.orders)
	}
	h.orders[k] = o
	return o
}

// list answers /api/rollouts. Only the rows of the page shown have their
// files counted.
func (h *Handler) list(q listQuery) listPage {
	now := h.now()
	h.mu.Lock()
	h.refreshLocked()
	o := h.sorted(q.run, q.sort, q.desc, now)
	page := listPage{Run: q.run, All: len(o.rows), Failed: o.failed, InFlight: o.inFlight, Offset: q.offset, Limit: q.limit, Rows: []listRow{}}
	if nk := h.index.notKeptOf(q.run); nk.Rollouts > 0 {
		page.NotKept, page.MaxRollouts = nk.Rollouts, h.index.max
	}
	rows := o.filter(filterKey{failed: q.failed, gymFailed: q.gymFailed, unhealthy: q.unhealthy, q: q.q}, h.whyFilter(q.gymFailed, q.unhealthy))
	page.Total = len(rows)
	shown := rows[min(q.offset, len(rows)):min(q.offset+q.limit, len(rows))]
	for _, r := range shown {
		page.Rows = append(page.Rows, h.listRow(r, now, false))
	}
	page.livePage = h.livePage(q.run, now)
	h.mu.Unlock()
	// The files of the page's rows are counted outside the lock.
	for i := range page.Rows {
		h.countFiles(&page.Rows[i])
	}
	for i := range page.Stalled {
		h.countFiles(&page.Stalled[i])
	}
	return page
}

// listRow is r as a row; counted rows have their files' lines counted.
func (h *Handler) listRow(r *rollout, now time.Time, counted bool) listRow {
	row := listRow{
		ID: r.ID, Run: r.Run, TraceID: r.TraceID, Status: r.Status, Errors: r.Errors, Failed: r.failed(),
		Roots: r.Roots, InFlight: r.InFlight, Service: r.Service, Name: r.Name,
		DurationMS: float64(r.duration(now).Microseconds()) / 1000, Spans: -1, ModelCalls: -1,
		HasPage: gymconv.SafeFileID(r.ID),
	}
	if r.Start != 0 {
		row.Start = time.Unix(0, r.Start).UTC().Format(time.RFC3339Nano)
	}
	h.whyFields(&row, r)
	h.fillLiveRow(r, now, &row.liveRow)
	if counted {
		h.countFiles(&row)
	}
	return row
}

func (h *Handler) countFiles(row *listRow) {
	if s, ok := rolloutFile(row.ID, spansSuffix); ok {
		row.Spans = h.counts.lines(h.dir, s)
	}
	if c, ok := rolloutFile(row.ID, captureSuffix); ok {
		row.ModelCalls = h.counts.lines(h.dir, c)
	}
}
