// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"
)

// maxRolloutFileBytes bounds the spans file one rollout page reads.
const maxRolloutFileBytes = 1 << 30

// rolloutPage is the answer of /api/rollout.
type rolloutPage struct {
	ID       string `json:"id"`
	Run      string `json:"run"`
	InFlight bool   `json:"in_flight"`
	// NotKept: its rollouts.jsonl row was let go (Options.MaxRollouts).
	NotKept   bool              `json:"not_kept,omitempty"`
	Summary   *listRow          `json:"summary,omitempty"` // its rollouts.jsonl row
	T0        string            `json:"t0,omitempty"`      // the first start, RFC 3339 UTC
	Duration  int64             `json:"duration"`          // ns from the first start to the last end
	Spans     []*viewSpan       `json:"spans"`             // in tree order
	Resources []json.RawMessage `json:"resources"`         // the spans' resource attributes, each once
	Services  []string          `json:"services"`          // by first appearance, for colours
	Errors    int               `json:"errors"`            // spans with status ERROR
	Exchanges []*exchange       `json:"exchanges"`
	Capture   bool              `json:"capture"` // a capture file exists
	Skipped   int               `json:"skipped,omitempty"`
	OtherRuns int               `json:"other_runs,omitempty"` // spans of the same id in other runs, left out
	// OtherDispatchExchanges counts the capture file's exchanges outside
	// this dispatch's spans (dispatch.go): another run's, not shown.
	OtherDispatchExchanges int                   `json:"other_dispatch_exchanges,omitempty"`
	JaegerURL              string                `json:"jaeger_url,omitempty"`
	LinkTargets            map[string]linkTarget `json:"link_targets,omitempty"`
	liveRollout                                  // capture-only and stalled (livepage.go)
}

// linkTarget is the rollout whose root a span link points at (a
// re-dispatched attempt's previous_attempt link, a job's links).
type linkTarget struct {
	ID  string `json:"id"`
	Run string `json:"run"`
}

// readRollout builds the page of rollout id in run: its spans file (spans
// of other runs that share the id are left out), its capture file, joined.
func (h *Handler) readRollout(id, run string) (*rolloutPage, error) {
	spansName, ok := rolloutFile(id, spansSuffix)
	if !ok {
		return nil, errBadID
	}
	captureName, _ := rolloutFile(id, captureSuffix)
	p := &rolloutPage{ID: id, Run: run, Spans: []*viewSpan{}, Resources: []json.RawMessage{}, Exchanges: []*exchange{}, Services: []string{}}

	h.mu.Lock()
	h.refreshLocked()
	row := h.index.byKey[rolloutKey{run: run, id: id}]
	if row != nil {
		r := h.listRow(row, h.now(), false)
		p.Summary = &r
	}
	p.NotKept = row == nil && h.index.letGo(id)
	inFlight := h.liveRolloutOf(id, run, row == nil && !p.NotKept, &p.liveRollout)
	h.mu.Unlock()

	spans, skipped, err := h.readSpans(spansName, run, &p.OtherRuns)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (row != nil || p.CaptureOnly):
		// Listed in rollouts.jsonl but its file is gone (or never written),
		// or a capture-only rollout.
	case err != nil:
		return nil, err
	}
	p.Skipped = skipped
	p.InFlight = row == nil && inFlight

	xs, err := h.readCaptures(captureName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		p.Capture = true
	}
	xs, p.OtherDispatchExchanges = ofThisDispatch(xs, spans, p.InFlight)
	joinExchanges(markModelCalls(spans), xs)

	t0 := rolloutStart(row, spans, xs)
	if t0 != 0 {
		p.T0 = time.Unix(0, t0).UTC().Format(time.RFC3339Nano)
	}
	rel := func(t int64) int64 {
		if t == 0 || t0 == 0 {
			return 0
		}
		return t - t0
	}
	byID := map[string]int{}
	for i, s := range spans {
		s.Start, s.End = rel(s.startAbs), rel(s.endAbs)
		p.Duration = max(p.Duration, s.End)
		if s.Status == "ERROR" {
			p.Errors++
		}
		if _, dup := byID[s.SpanID]; !dup {
			byID[s.SpanID] = i
		}
	}
	for _, x := range xs {
		x.Start, x.End = rel(x.startAbs), rel(x.endAbs)
		p.Duration = max(p.Duration, x.End)
		if x.SpanID != "" {
			spans[byID[x.SpanID]].Exchange = len(p.Exchanges)
		}
		p.Exchanges = append(p.Exchanges, x)
	}
	p.Spans = treeOrder(spans)
	p.groupByProcess()
	p.LinkTargets = h.linkTargets(p.Spans)
	if h.opts.JaegerURL != "" && row != nil && validHexID(row.TraceID, 32) {
		p.JaegerURL = jaegerTraceURL(h.opts.JaegerURL, row.TraceID)
	} else if h.opts.JaegerURL != "" && len(p.Spans) > 0 && validHexID(p.Spans[0].TraceID, 32) {
		p.JaegerURL = jaegerTraceURL(h.opts.JaegerURL, p.Spans[0].TraceID)
	}
	return p, nil
}

// rolloutStart is where a rollout's page starts (Unix ns, 0: unknown): its
// first span or its row's start, else, with no span, its first exchange.
func rolloutStart(row *rollout, spans []*viewSpan, xs []*exchange) int64 {
	t0 := int64(0)
	for _, s := range spans {
		if s.startAbs != 0 && (t0 == 0 || s.startAbs < t0) {
			t0 = s.startAbs
		}
	}
	if row != nil && row.Start != 0 && (t0 == 0 || row.Start < t0) {
		t0 = row.Start
	}
	for _, x := range xs {
		if len(spans) == 0 && x.startAbs != 0 && (t0 == 0 || x.startAbs < t0) {
			t0 = x.startAbs // a capture-only rollout: its first exchange
		}
	}
	return t0
}

// groupByProcess lists p's services in the order of its spans, and its
// resources once each: the spans of a process share one.
func (p *rolloutPage) groupByProcess() {
	seen := map[string]bool{}
	resources := map[string]int{}
	for _, s := range p.Spans {
		if !seen[s.Service] {
			seen[s.Service] = true
			p.Services = append(p.Services, s.Service)
		}
		i, ok := resources[string(s.resource)]
		if !ok {
			i = len(p.Resources)
			resources[string(s.resource)] = i
			p.Resources = append(p.Resources, s.resource)
		}
		s.Resource = i
	}
}

func (h *Handler) readSpans(name fileName, run string, otherRuns *int) ([]*viewSpan, int, error) {
	f, st, err := h.dir.open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if st.Size() > maxRolloutFileBytes {
		return nil, 0, fmt.Errorf("%s is %d bytes: %w", name.s, st.Size(), errTooLarge)
	}
	var spans []*viewSpan
	skipped := 0
	stats, err := eachLine(io.LimitReader(f, st.Size()), maxLineBytes, func(line []byte) error {
		ok := parseSpanLine(line, func(v *viewSpan) {
			if run != "" && v.run != "" && v.run != run {
				*otherRuns++
				return
			}
			spans = append(spans, v)
		})
		if !ok {
			skipped++
		}
		return nil
	})
	return spans, skipped + stats.skipped, err
}

func (h *Handler) readCaptures(name fileName) ([]*exchange, error) {
	f, _, err := h.dir.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var xs []*exchange
	n := 0
	_, err = eachLine(f, maxLineBytes, func(line []byte) error {
		if x, ok := parseCaptureLine(n, line); ok {
			xs = append(xs, x)
		}
		n++
		return nil
	})
	return xs, err
}

// treeOrder lists spans depth first, children by start time, and sets each
// span's Depth and Descendants. A span whose parent is not in the file is a
// root (marked Orphan); a span id seen twice nests under its first copy's
// parent only once; cycles cannot loop.
func treeOrder(spans []*viewSpan) []*viewSpan {
	byID := make(map[string]*viewSpan, len(spans))
	for _, s := range spans {
		if _, dup := byID[s.SpanID]; !dup && s.SpanID != "" {
			byID[s.SpanID] = s
		}
	}
	children := map[*viewSpan][]*viewSpan{}
	var roots []*viewSpan
	for _, s := range spans {
		parent := byID[s.ParentID]
		if s.ParentID == "" || parent == nil || parent == s {
			s.Orphan = s.ParentID != ""
			roots = append(roots, s)
			continue
		}
		children[parent] = append(children[parent], s)
	}
	byStart := func(l []*viewSpan) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].startAbs < l[j].startAbs })
	}
	byStart(roots)
	out := make([]*viewSpan, 0, len(spans))
	placed := make(map[*viewSpan]bool, len(spans))
	var walk func(s *viewSpan, depth int)
	walk = func(s *viewSpan, depth int) {
		placed[s] = true
		s.Depth = depth
		at := len(out)
		out = append(out, s)
		kids := children[s]
		byStart(kids)
		for _, c := range kids {
			if !placed[c] {
				walk(c, depth+1)
			}
		}
		s.Descendants = len(out) - at - 1
	}
	for _, r := range roots {
		walk(r, 0)
	}
	// Spans only in a cycle (a parent chain that never reaches a root).
	for _, s := range spans {
		if !placed[s] {
			s.Orphan = true
			walk(s, 0)
		}
	}
	return out
}

func (h *Handler) linkTargets(spans []*viewSpan) map[string]linkTarget {
	var ids []string
	for _, s := range spans {
		if len(s.Links) > 2 {
			ids = append(ids, linkedSpanIDs(s.Links)...)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]linkTarget{}
	for _, id := range ids {
		if r := h.index.byRoot[id]; r != nil {
			out[id] = linkTarget{ID: r.ID, Run: r.Run}
		}
	}
	return out
}
