// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the directory scan.
const (
	minScanInterval = time.Second
	// scanCostFactor spaces scans of a large directory: the next scan waits
	// at least this many times as long as the last one took.
	scanCostFactor = 20
	// firstLineBudget is how many new spans files one scan opens to learn
	// the run of a rollout in flight (their first line only).
	firstLineBudget = 512
	maxFirstLine    = 1 << 20
)

// dirScan knows which <id>.spans.jsonl files exist, from the directory's
// entries (no file is opened to list them). A rollout in flight is one whose
// spans file exists with no rollouts.jsonl line yet; its run and a first
// start time come from the first line of its file, read once. It keeps the
// ids of rollouts with no line only (done): those it is asked about, few
// beside the whole dir's.
//
// The directory is scanned again only when its mtime changed (a file was
// created or removed) or the index started over, at most once per
// minScanInterval, and less often the longer a scan takes.
type dirScan struct {
	dir *captureDir

	next    time.Time // no scan before
	mtime   unix.Timespec
	resets  uint64              // the index's resets at the last scan
	ids     map[string]struct{} // rollouts with a spans file and no line
	capts   map[string]struct{} // rollouts with a capture file and no line (live.go)
	flight  map[string]*rollout // rollouts read as in flight, by id
	refused map[string]struct{} // spans files the viewer does not open (a hard link): not listed
	gen     uint64
	scanned time.Time     // when the last scan started
	cost    time.Duration // how long it took
}

func newDirScan(dir *captureDir) *dirScan {
	return &dirScan{dir: dir, ids: map[string]struct{}{}, capts: map[string]struct{}{}, flight: map[string]*rollout{}, refused: map[string]struct{}{}}
}

// refresh rescans the directory when it changed. Callers hold the index lock.
func (s *dirScan) refresh(now time.Time, ix *rolloutIndex) error {
	if now.Before(s.next) {
		return nil
	}
	s.next = now.Add(minScanInterval)
	dirfd, err := s.dir.dirFD()
	if err != nil {
		return nil // not there yet: nothing in flight
	}
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return err
	}
	if st.Mtim == s.mtime && s.resets == ix.resets && len(s.pending(ix)) == 0 {
		return nil
	}
	start := time.Now()
	ids, capts := make(map[string]struct{}, len(s.ids)), make(map[string]struct{}, len(s.capts))
	err = s.dir.eachEntry(func(n string) {
		if id, ok := rolloutOfSpansFile(n); ok {
			if !ix.done(id) {
				ids[id] = struct{}{}
			}
		} else if id, ok := rolloutOfCaptureFile(n); ok && !ix.done(id) {
			capts[id] = struct{}{}
		}
	})
	if err != nil {
		return err
	}
	s.mtime, s.resets = st.Mtim, ix.resets
	s.ids, s.capts = ids, capts
	for id := range s.flight {
		if _, ok := ids[id]; !ok {
			delete(s.flight, id)
		}
	}
	for id := range s.refused {
		if _, ok := ids[id]; !ok {
			delete(s.refused, id)
		}
	}
	budget := firstLineBudget
	for _, id := range s.pending(ix) {
		if budget == 0 {
			s.next = now // more to read: the next request goes on
			break
		}
		budget--
		if r := s.readFirstLine(id); r != nil {
			s.flight[id] = r
		} else {
			s.refused[id] = struct{}{}
		}
	}
	s.gen++
	s.scanned, s.cost = start, time.Since(start)
	if cost := time.Since(start) * scanCostFactor; cost > minScanInterval && s.next.After(now) {
		s.next = now.Add(cost)
	}
	return nil
}

// pending are the rollouts with a spans file, no rollouts.jsonl line and no
// first line read yet.
func (s *dirScan) pending(ix *rolloutIndex) []string {
	var out []string
	for id := range s.ids {
		if done := ix.done(id); done {
			continue
		}
		_, read := s.flight[id]
		_, refused := s.refused[id]
		if !read && !refused {
			out = append(out, id)
		}
	}
	return out
}

// inFlight lists the rollouts of run in flight.
func (s *dirScan) inFlight(run string, ix *rolloutIndex) []*rollout {
	var out []*rollout
	for id, r := range s.flight {
		if done := ix.done(id); done {
			continue
		}
		if _, ok := s.ids[id]; ok && r.Run == run {
			out = append(out, r)
		}
	}
	return out
}

// readFirstLine learns a rollout's run and a start time from the first line
// of its spans file; nil when the file is not one the viewer opens.
func (s *dirScan) readFirstLine(id string) *rollout {
	r := &rollout{ID: id, InFlight: true}
	name, _ := rolloutFile(id, spansSuffix)
	f, _, err := s.dir.open(name)
	if errors.Is(err, errNotRegular) {
		return nil
	}
	if err != nil {
		return r
	}
	defer f.Close()
	_, _ = eachLine(io.LimitReader(f, maxFirstLine), maxFirstLine, func(line []byte) error {
		parseSpanLine(line, func(v *viewSpan) {
			if r.Start == 0 || (v.startAbs != 0 && v.startAbs < r.Start) {
				r.Run, r.Start, r.TraceID = v.run, v.startAbs, v.TraceID
			}
		})
		return errStop
	})
	return r
}

// errStop ends an eachLine early.
var errStop = errors.New("stop")
