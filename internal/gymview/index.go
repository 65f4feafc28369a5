// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"time"
)

// maxRolloutLine bounds a rollouts.jsonl line (they are a few hundred bytes).
const maxRolloutLine = 1 << 20

// rollout is what the viewer knows of one (run, rollout id) from
// rollouts.jsonl, or, for one still in flight, from its spans file.
type rollout struct {
	ID, Run             string
	TraceID, RootSpanID string
	Start, End          int64 // unix ns; 0 when unknown
	Status              string
	Errors              int
	Roots               int // rollouts.jsonl lines (one per rollout root)
	Service, Name       string
	InFlight            bool
	Split               *rolloutSplit // where its time went (timesplit.go); nil when unknown
	CaptureOnly         bool          // a capture file and no spans (live.go)

	otherRoots []string // the root span ids of its other roots' lines
}

// failed: the rollout counted an error span or its root failed.
func (r *rollout) failed() bool { return r.Errors > 0 || r.Status == "ERROR" }

// duration is End-Start, or for a rollout in flight the time since Start.
func (r *rollout) duration(now time.Time) time.Duration {
	switch {
	case r.Start == 0:
		return 0
	case r.InFlight:
		return time.Duration(now.UnixNano() - r.Start)
	case r.End < r.Start:
		return 0
	}
	return time.Duration(r.End - r.Start)
}

type rolloutKey struct{ run, id string }

// rolloutLine is one line of rollouts.jsonl as gymspans writes it
// (encodeRoots in exporter/gymspansexporter). Unknown fields are ignored.
type rolloutLine struct {
	RolloutID   string          `json:"rollout_id"`
	RunID       string          `json:"run_id"`
	TraceID     string          `json:"trace_id"`
	RootSpanID  string          `json:"root_span_id"`
	StartTime   string          `json:"start_time"`
	EndTime     string          `json:"end_time"`
	Status      string          `json:"status"`
	ErrorCount  int             `json:"error_count"`
	ServiceName string          `json:"service_name"`
	Name        string          `json:"name"`
	TimeSplitMS json.RawMessage `json:"time_split_ms"` // where its time went (timesplit.go)
}

// DefaultMaxRollouts is how many rollouts.jsonl rows the viewer keeps by
// default: about 480 bytes each, some 115 MiB.
const DefaultMaxRollouts = 250_000

// rolloutIndex is rollouts.jsonl read incrementally: each refresh reads only
// the bytes appended since the last one (a replaced or truncated file is
// read again from the start). Several lines of one (run, rollout), which a
// rollout with several roots has, make one row.
//
// It keeps at most max rows, the newest by their place in the file; the
// oldest are let go (forget) and leave, per run, their counts (notKept) and,
// per rollout, a 64-bit hash of its id, so that its spans file is not taken
// for a rollout in flight (done).
type rolloutIndex struct {
	dir *captureDir
	max int

	dev, ino  uint64
	offset    int64
	rows      []*rollout
	byKey     map[rolloutKey]*rollout
	byRun     map[string][]*rollout // in file order
	byRoot    map[string]*rollout   // root span id → row, for links between rollouts
	ids       map[string]int32      // every rollout id with a row, in any run: its rows
	malformed int
	badSplits int // lines whose time_split_ms is unreadable (timesplit.go)
	// repeated is the first rollout id with rows in two runs (Gym reuses
	// its ids in every run): its earlier run's files and the later run's
	// capture sit side by side (dispatch.go); repeatedRuns are those runs.
	repeated     string
	repeatedRuns [2]string
	gen          uint64 // changes whenever rows change
	resets       uint64 // changes whenever the index starts over (reset)
	strs         map[string]string

	// What forget let go: each run's counts, their sum, and the ids' hashes.
	notKept    map[string]*notKept
	notKeptAll int
	forgotten  map[uint64]struct{}
	seed       maphash.Seed
}

// notKept is what a run's rows let go of (forget) still count for.
type notKept struct {
	Rollouts, Failed int
	Start, End       int64 // unix ns, 0 when unknown
}

// newRolloutIndex returns an index that keeps at most max rows (0:
// DefaultMaxRollouts).
func newRolloutIndex(dir *captureDir, max int) *rolloutIndex {
	if max <= 0 {
		max = DefaultMaxRollouts
	}
	ix := &rolloutIndex{dir: dir, max: max, seed: maphash.MakeSeed()}
	ix.reset()
	return ix
}

func (ix *rolloutIndex) reset() {
	ix.dev, ix.ino, ix.offset = 0, 0, 0
	ix.rows = nil
	ix.byKey = map[rolloutKey]*rollout{}
	ix.byRun = map[string][]*rollout{}
	ix.byRoot = map[string]*rollout{}
	ix.ids = map[string]int32{}
	ix.strs = map[string]string{}
	ix.notKept, ix.notKeptAll = map[string]*notKept{}, 0
	ix.forgotten = map[uint64]struct{}{}
	ix.malformed, ix.badSplits = 0, 0
	ix.repeated, ix.repeatedRuns = "", [2]string{}
	ix.gen++
	ix.resets++
}

// reserve sizes the empty index for about n rollouts, so that reading a
// large rollouts.jsonl does not grow its maps step by step.
func (ix *rolloutIndex) reserve(n int) {
	n = min(n, ix.max+ix.max/forgetFraction+1)
	ix.rows = make([]*rollout, 0, n)
	ix.byKey = make(map[rolloutKey]*rollout, n)
	ix.byRoot = make(map[string]*rollout, n)
	ix.ids = make(map[string]int32, n)
}

// refresh reads what was appended to rollouts.jsonl. Callers hold ix.mu.
func (ix *rolloutIndex) refresh() error {
	f, st, err := ix.dir.open(rolloutsFile)
	if errors.Is(err, fs.ErrNotExist) {
		if len(ix.rows) > 0 || ix.offset > 0 {
			ix.reset()
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	dev, ino := fileIdentity(st)
	if dev != ix.dev || ino != ix.ino || st.Size() < ix.offset {
		ix.reset()
		ix.dev, ix.ino = dev, ino
	}
	if st.Size() == ix.offset {
		return nil
	}
	if ix.offset == 0 {
		ix.reserve(int(st.Size() / 250)) // gymspans writes about 300 bytes a line
	}
	stats, err := eachLine(io.NewSectionReader(f, ix.offset, st.Size()-ix.offset), maxRolloutLine, ix.add)
	ix.offset += stats.consumed
	ix.malformed += stats.skipped
	if stats.lines > 0 {
		ix.gen++
	}
	return err
}

// done reports whether rollout id has a rollouts.jsonl line, in any run:
// a row, or one let go (by its id's hash: a collision, about one in 2^64 a
// pair, would hide a rollout in flight).
func (ix *rolloutIndex) done(id string) bool {
	if _, ok := ix.ids[id]; ok {
		return true
	}
	return ix.letGo(id)
}

// letGo reports whether rollout id's row, of some run, was let go (forget).
func (ix *rolloutIndex) letGo(id string) bool {
	if len(ix.forgotten) == 0 {
		return false
	}
	_, ok := ix.forgotten[maphash.String(ix.seed, id)]
	return ok
}

// notKeptOf is what run's rows let go of count for (zero when none were).
func (ix *rolloutIndex) notKeptOf(run string) notKept {
	if n := ix.notKept[run]; n != nil {
		return *n
	}
	return notKept{}
}

// forgetFraction: past max rows, the oldest max/forgetFraction more are let
// go at once, so that a row added costs its share of one pass, not a pass.
const forgetFraction = 16

// forget lets the oldest rows go until max-max/forgetFraction are left.
// The rows are in file order, and so are each run's: those let go are a
// prefix of rows and of their runs'.
func (ix *rolloutIndex) forget() {
	n := len(ix.rows) - (ix.max - ix.max/forgetFraction)
	if n <= 0 {
		return
	}
	runs := map[string]int{}
	for _, r := range ix.rows[:n] {
		k := rolloutKey{run: r.Run, id: r.ID}
		if ix.byKey[k] == r {
			delete(ix.byKey, k)
		}
		for _, root := range append(r.otherRoots, r.RootSpanID) {
			if root != "" && ix.byRoot[root] == r {
				delete(ix.byRoot, root)
			}
		}
		nk := ix.notKept[r.Run]
		if nk == nil {
			nk = &notKept{}
			ix.notKept[r.Run] = nk
		}
		nk.Rollouts++
		ix.notKeptAll++
		if r.failed() {
			nk.Failed++
		}
		if r.Start != 0 && (nk.Start == 0 || r.Start < nk.Start) {
			nk.Start = r.Start
		}
		nk.End = max(nk.End, r.End)
		runs[r.Run]++
		// An id stays in ids while a row of another run has it.
		if ix.ids[r.ID]--; ix.ids[r.ID] <= 0 {
			delete(ix.ids, r.ID)
			ix.forgotten[maphash.String(ix.seed, r.ID)] = struct{}{}
		}
	}
	ix.rows = dropFront(ix.rows, n)
	for run, k := range runs {
		if rest := dropFront(ix.byRun[run], k); len(rest) > 0 {
			ix.byRun[run] = rest
		} else {
			delete(ix.byRun, run)
		}
	}
	ix.gen++
}

// dropFront returns s without its first n elements, in a new array so that
// those let go are not held by the old one.
func dropFront(s []*rollout, n int) []*rollout {
	out := make([]*rollout, len(s)-n, max(len(s)-n, cap(s)-n))
	copy(out, s[n:])
	return out
}

func (ix *rolloutIndex) add(line []byte) error {
	l, ok := parseRolloutLine(line)
	if !ok || l.RolloutID == "" {
		ix.malformed++
		return nil
	}
	start, end := parseTime(l.StartTime), parseTime(l.EndTime)
	k := rolloutKey{run: l.RunID, id: l.RolloutID}
	if r := ix.byKey[k]; r != nil {
		// Another root of the same rollout: the row spans them all.
		r.Roots++
		other := l.RootSpanID // the root id the row does not show
		if start != 0 && (r.Start == 0 || start < r.Start) {
			r.Start = start
			other = r.RootSpanID
			r.TraceID, r.RootSpanID = l.TraceID, l.RootSpanID
			r.Service, r.Name = ix.intern(l.ServiceName), ix.intern(l.Name)
		}
		if other != "" && other != r.RootSpanID {
			r.otherRoots = append(r.otherRoots, other) // for forget
		}
		r.End = max(r.End, end)
		r.Errors = max(r.Errors, l.ErrorCount)
		if l.Status == "ERROR" {
			r.Status = "ERROR"
		}
		if l.RootSpanID != "" {
			ix.byRoot[l.RootSpanID] = r
		}
		ix.noteSplit(r, l.TimeSplitMS, start, end)
		return nil
	}
	r := &rollout{
		ID: l.RolloutID, Run: ix.intern(l.RunID), TraceID: l.TraceID, RootSpanID: l.RootSpanID,
		Start: start, End: end, Status: ix.intern(l.Status), Errors: l.ErrorCount, Roots: 1,
		Service: ix.intern(l.ServiceName), Name: ix.intern(l.Name),
	}
	ix.rows = append(ix.rows, r)
	ix.byKey[k] = r
	ix.byRun[r.Run] = append(ix.byRun[r.Run], r)
	if ix.ids[r.ID]++; ix.ids[r.ID] > 1 && ix.repeated == "" {
		ix.repeated = r.ID
		ix.repeatedRuns = [2]string{ix.otherRun(r), r.Run}
	}
	if r.RootSpanID != "" {
		ix.byRoot[r.RootSpanID] = r
	}
	ix.noteSplit(r, l.TimeSplitMS, start, end)
	if len(ix.rows) > ix.max {
		ix.forget()
	}
	return nil
}

// otherRun is a run other than r's with a row of r's id, or "".
func (ix *rolloutIndex) otherRun(r *rollout) string {
	for run := range ix.byRun {
		if run != r.Run && ix.byKey[rolloutKey{run: run, id: r.ID}] != nil {
			return run
		}
	}
	return ""
}

// intern keeps one copy of the strings most rows share (run, service, name).
func (ix *rolloutIndex) intern(s string) string { return intern(ix.strs, s, 1<<16) }

// intern returns strs' copy of s, keeping s as the copy while strs holds
// fewer than limit strings.
func intern(strs map[string]string, s string, limit int) string {
	if v, ok := strs[s]; ok {
		return v
	}
	if len(strs) < limit {
		strs[s] = s
	}
	return s
}

// parseTime reads gymspans' UTC timestamps (RFC 3339, microseconds); 0 when
// absent or unreadable.
func parseTime(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}
