// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the live state (design §8: capture-only and stalled rollouts).
const (
	// noSpansAfter is how long a rollout's capture file may be without a
	// span of the rollout before the rollout counts as capture-only: a
	// healthy run's first spans of a rollout reach its spans file within
	// the SDK's batch delay (5 s) and the gym processor's settle (5 s) of
	// its first model call.
	noSpansAfter = 30 * time.Second
	// liveReadBudget and liveFileBudget bound what one refresh reads of
	// capture and spans files (a capture line holds whole model requests and
	// responses), and liveStatBudget the capture files it stats to learn
	// they are old: the first look at a large capture dir takes several.
	liveReadBudget = 64 << 20
	liveFileBudget = 2048
	liveStatBudget = 8192
	// recheckEvery spaces the checks of capture-only rollouts that are
	// done (their last model exchange asked for no tool): they are not
	// expected to grow, but a multi-turn environment may talk to the
	// model again.
	recheckEvery = 30 * time.Second
)

// DefaultStalledAfter is how long a rollout in flight may show no sign of
// life before it is marked stalled (design §8 argues it from Gym's timings:
// Gym's HTTP client has no timeout, a sandboxed tool command's is 180 s).
const DefaultStalledAfter = 5 * time.Minute

// liveState is what the viewer knows of the rollouts that may still be
// running, beyond the rollout index and the directory scan:
//
//   - capture-only rollouts: a <id>.capture.jsonl with no <id>.spans.jsonl
//     and no rollouts.jsonl line for noSpansAfter (Gym's telemetry is off),
//     listed from their capture lines (captureFile);
//   - the signs of life of rollouts in flight with a spans file: the end of
//     their latest span (spansLife) and their capture file's mtime (Gym
//     appends a line when a model call completes).
//
// It owns its maps; Handler.mu guards it. Files are read by offset as they
// grow, within liveReadBudget a refresh.
type liveState struct {
	dir *captureDir

	seen      map[string]time.Time    // capture files without spans, not yet capture-only: when first seen
	captures  map[string]*captureFile // capture-only rollouts
	active    map[string]*captureFile // those not read yet or in flight
	spans     map[string]*spansLife   // rollouts in flight with a spans file
	details   map[string]*stallDetail // of stalled rollouts (livepage.go)
	runModels map[string]modelOf      // each run's model server, once known (livepage.go)
	scanGen   uint64                  // the generations the candidates were taken from
	indexGen  uint64
	checked   time.Time     // the last check of every capture-only rollout
	checkCost time.Duration // how long it took
	gen       uint64        // changes when capture-only rows change

	// Rollouts that became capture-only, ever, and as many when Watch last
	// reported them; fresh names some of those since.
	qualified, reportedQualified int
	fresh                        []string
}

func newLiveState(dir *captureDir) *liveState {
	return &liveState{dir: dir, seen: map[string]time.Time{}, captures: map[string]*captureFile{}, active: map[string]*captureFile{},
		spans: map[string]*spansLife{}, details: map[string]*stallDetail{}, runModels: map[string]modelOf{}}
}

// refresh brings the live state up to date with the index and the scan.
// Callers hold the handler's lock.
func (l *liveState) refresh(now time.Time, scan *dirScan, ix *rolloutIndex) {
	budget := readBudget{bytes: liveReadBudget, files: liveFileBudget, stats: liveStatBudget}
	if scan.gen != l.scanGen || ix.gen != l.indexGen {
		l.scanGen, l.indexGen = scan.gen, ix.gen
		l.candidates(now, scan, ix, &budget)
	} else {
		for id, first := range l.seen {
			l.qualify(id, first, now, &budget)
		}
	}
	// The capture-only rollouts not read yet or in flight are read as they
	// grow; every one is checked again at most every recheckEvery, and then
	// at most 1% of the time.
	for id, c := range l.active {
		if !budget.left() {
			break
		}
		if c.update(l.dir, &budget) {
			l.gen++
		}
		if c.read && c.done {
			delete(l.active, id)
		}
	}
	if now.Sub(l.checked) >= max(recheckEvery, l.checkCost*watchCostFactor) {
		started := time.Now()
		for id, c := range l.captures {
			if c.read && c.done && c.update(l.dir, &budget) {
				l.gen++
				if !c.done {
					l.active[id] = c
				}
			}
		}
		l.checked, l.checkCost = now, time.Since(started)
	}
	for id := range l.spans {
		done := ix.done(id)
		if _, ok := scan.ids[id]; done || !ok {
			delete(l.spans, id)
		}
	}
	for id := range l.details {
		if l.spans[id] == nil && l.captures[id] == nil {
			delete(l.details, id)
		}
	}
	for id := range scan.flight {
		if done := ix.done(id); done {
			continue
		}
		if _, ok := scan.ids[id]; !ok {
			continue
		}
		s := l.spans[id]
		if s == nil {
			s = &spansLife{}
			l.spans[id] = s
		}
		if budget.left() {
			s.update(l.dir, id, &budget)
		}
	}
}

// candidates takes the capture files that have no spans file and no
// rollouts.jsonl line: a capture-only rollout once its file is older than
// noSpansAfter or was seen that long ago. A capture-only rollout whose
// spans come after all leaves the list.
func (l *liveState) candidates(now time.Time, scan *dirScan, ix *rolloutIndex, budget *readBudget) {
	hasSpans := func(id string) bool {
		_, a := scan.ids[id]
		b := ix.done(id)
		return a || b
	}
	for id := range l.captures {
		if _, ok := scan.capts[id]; !ok || hasSpans(id) {
			delete(l.captures, id)
			delete(l.active, id)
			l.gen++
		}
	}
	for id := range l.seen {
		if _, ok := scan.capts[id]; !ok || hasSpans(id) {
			delete(l.seen, id)
		}
	}
	for id := range scan.capts {
		if _, ok := l.captures[id]; ok || hasSpans(id) {
			continue
		}
		first, ok := l.seen[id]
		if !ok {
			first = now
			l.seen[id] = now
		}
		l.qualify(id, first, now, budget)
	}
}

// qualify makes id, a capture file first seen at first without spans, a
// capture-only rollout when it has been so for noSpansAfter.
func (l *liveState) qualify(id string, first, now time.Time, budget *readBudget) {
	if now.Sub(first) < noSpansAfter && (budget.stats <= 0 || !l.quietSince(id, now, budget)) {
		return
	}
	delete(l.seen, id)
	c := &captureFile{row: &rollout{ID: id, CaptureOnly: true}}
	l.captures[id], l.active[id] = c, c
	l.qualified++
	l.gen++
	if len(l.fresh) < maxReportedIDs {
		l.fresh = append(l.fresh, id)
	}
}

// quietSince reports whether id's capture file was last written
// noSpansAfter ago or earlier (a capture dir of a past run).
func (l *liveState) quietSince(id string, now time.Time, budget *readBudget) bool {
	budget.stats--
	name, _ := rolloutFile(id, captureSuffix)
	mtime, _, err := l.dir.stat(name)
	return err == nil && now.Sub(time.Unix(0, mtime)) >= noSpansAfter
}

// captureOnly lists the capture-only rollouts (they have no run).
func (l *liveState) captureOnly() []*rollout {
	out := make([]*rollout, 0, len(l.captures))
	for _, c := range l.captures {
		out = append(out, c.row)
	}
	return out
}

// lastLife is the last sign of life of r (unix ns; 0 when none is known):
// the end of its latest span and its capture file's last write, or for a
// capture-only rollout its last model exchange.
func (l *liveState) lastLife(r *rollout) int64 {
	if c := l.captures[r.ID]; c != nil && r.CaptureOnly {
		return max(c.last, c.mtime)
	}
	if s := l.spans[r.ID]; s != nil {
		return max(s.maxEnd, s.captureMtime)
	}
	return 0
}

// stat is the mtime (unix ns) and size of name, without opening it; a name
// that is not a regular file is errNotRegular.
func (d *captureDir) stat(name fileName) (int64, int64, error) {
	dirfd, err := d.dirFD()
	if err != nil {
		return 0, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name.s, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: name.s, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, 0, errNotRegular
	}
	return st.Mtim.Nano(), st.Size, nil
}

// readBudget is what one refresh may still read: bytes, files opened, and
// files stat'ed to tell their age.
type readBudget struct {
	bytes        int64
	files, stats int
}

func (b *readBudget) left() bool { return b.bytes > 0 && b.files > 0 }

// spend counts one file opened and n bytes read.
func (b *readBudget) spend(n int64) {
	b.files--
	b.bytes -= n
}
