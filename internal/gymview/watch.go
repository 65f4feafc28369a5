// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"slices"
	"time"
)

// watchCostFactor spaces the directory scans of Watch, which runs whether
// or not anyone looks: the next scan waits at least this many times as long
// as the last one took (a scan of 100,000 rollouts' files takes about 0.1 s).
const watchCostFactor = 100

// maxReportedIDs bounds the rollout ids one LiveReport names.
const maxReportedIDs = 10

// LiveReport is what one Watch found, for the collector's log and metrics.
type LiveReport struct {
	// NoSpansNew counts the rollouts that became capture-only since the
	// last Watch (a capture file, and no span of theirs, for 30 s): Gym's
	// telemetry is off. NoSpansIDs names some of them.
	NoSpansNew int
	NoSpansIDs []string
	// NoSpans counts the capture-only rollouts now.
	NoSpans int
	// Stalled counts the stalled rollouts of each run that had one while
	// watched (0 once it has none).
	Stalled map[string]int
	// NewStalls are the rollouts that stalled since the last Watch; each
	// is reported once.
	NewStalls []Stall
	// NotKept counts the rollouts whose rows were let go to stay within
	// Options.MaxRollouts, in all runs.
	NotKept int
}

// Stall is a stalled rollout as the log tells it.
type Stall struct {
	Run, ID     string
	Idle        time.Duration
	At          time.Time // its last sign of life
	Seen, Waits string    // "server: call", where it was last seen and what it waits on
	Why         string    // how the call it waits on is known
}

// watchState is what Watch remembers between calls.
type watchState struct {
	start    time.Time
	reported map[rolloutKey]bool // stalls reported, until the rollout leaves flight
	runs     map[string]bool     // runs with a stalled rollout while watched
}

// Watch reads what the capture dir gained and reports capture-only and
// stalled rollouts. A rollout counts as stalled here only when it showed
// life after the first Watch: the run is live, not a past run's rollout
// that never finished. The gymview extension calls it every few seconds.
func (h *Handler) Watch() LiveReport {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &h.watch
	if w.start.IsZero() {
		w.start, w.reported, w.runs = now, map[rolloutKey]bool{}, map[string]bool{}
	}
	h.refreshWatchLocked()
	rep := LiveReport{NoSpansNew: h.live.qualified - h.live.reportedQualified, NoSpansIDs: h.live.fresh, NoSpans: len(h.live.captures),
		NotKept: h.index.notKeptAll}
	h.live.reportedQualified, h.live.fresh = h.live.qualified, nil
	rep.Stalled = map[string]int{}
	for run := range w.runs {
		rep.Stalled[run] = 0
	}
	inFlight := map[rolloutKey]bool{}
	h.eachInFlight(func(r *rollout) {
		k := rolloutKey{run: r.Run, id: r.ID}
		inFlight[k] = true
		st := h.stallOf(r, now)
		if st == nil || h.live.lastLife(r) < w.start.UnixNano() {
			return
		}
		rep.Stalled[r.Run]++
		w.runs[r.Run] = true
		if !w.reported[k] {
			w.reported[k] = true
			rep.NewStalls = append(rep.NewStalls, newStall(r, st))
		}
	})
	for k := range w.reported {
		if !inFlight[k] {
			delete(w.reported, k)
		}
	}
	slices.SortFunc(rep.NewStalls, func(a, b Stall) int { return cmp.Compare(b.Idle, a.Idle) })
	return rep
}

// refreshWatchLocked is refreshLocked with the directory scanned less
// often. Callers hold h.mu.
func (h *Handler) refreshWatchLocked() {
	if since := time.Since(h.scan.scanned); since < h.scan.cost*watchCostFactor {
		err := h.index.refresh()
		h.live.refresh(h.now(), h.scan, h.index)
		h.noteErr(err)
		return
	}
	h.refreshLocked()
}

// eachInFlight calls fn with the rollouts of every run without a
// rollouts.jsonl line that are in flight. Callers hold h.mu.
func (h *Handler) eachInFlight(fn func(r *rollout)) {
	for id, r := range h.scan.flight {
		if done := h.index.done(id); done {
			continue
		}
		if _, ok := h.scan.ids[id]; ok {
			fn(r)
		}
	}
	for _, c := range h.live.active {
		if c.row.InFlight {
			fn(c.row)
		}
	}
}

func newStall(r *rollout, st *stall) Stall {
	at, _ := time.Parse(time.RFC3339Nano, st.At)
	where := func(p place) string {
		if p.Server == "" {
			return p.Call
		}
		return p.Server + ": " + p.Call
	}
	return Stall{
		Run: r.Run, ID: r.ID, Idle: time.Duration(st.IdleMS * float64(time.Millisecond)), At: at,
		Seen: where(st.Seen), Waits: where(st.WaitsOn), Why: st.WaitsOn.How,
	}
}
