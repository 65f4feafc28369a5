// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/pending"
	"go.uber.org/zap"
)

// The flusher: one goroutine that writes what the pushes leave behind them.
//
//	every flush_interval (issue #29: one wake-up per interval, not one per
//	  file): every pending file (internal/pending), one append each → their
//	  rollouts.jsonl lines → close the finished rollouts' files → fsync the
//	  journal index, then every file written (internal/capturedir) → done record →
//	  service map (with its journal position) → index segments
//	on a wake (the pending bytes reached max_pending_bytes): every pending
//	  file, the same way, without the fsyncs
//
// In write-through mode (combined_file: "") nothing is pending: the ticks
// only fsync and flush the service map.

// flusher owns the periodic work of one started exporter.
type flusher struct {
	mu      sync.Mutex // one flush at a time (the loop's, shutdown's, a test's)
	e       *spansExporter
	store   *capturedir.Store
	journal tickJournal
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// tickJournal is the journal index's part of a flush tick, picked at Start:
// the *journal.Index with the combined file, noJournal without.
type tickJournal interface {
	ID() string // names the index in service_map.json
	Sync() error
	MarkDone(seq uint64) error
	Maintain(serviceMap uint64) error
}

// noJournal is tickJournal with combined_file "": nothing is recorded.
type noJournal struct{}

func (noJournal) ID() string            { return "" }
func (noJournal) Sync() error           { return nil }
func (noJournal) MarkDone(uint64) error { return nil }
func (noJournal) Maintain(uint64) error { return nil }

func newFlusher(e *spansExporter, store *capturedir.Store, j tickJournal) *flusher {
	return &flusher{e: e, store: store, journal: j, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// poke asks for a flush of the finished rollouts (or of everything, at the
// bound) without waiting for it.
func (f *flusher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *flusher) run() {
	defer close(f.stopped)
	fi := f.e.cfg.FlushInterval
	t := time.NewTicker(fi)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			_ = f.tick()
		case <-f.wake: // only poked with the pending store, at its bound
			f.mu.Lock()
			f.writePending(allFiles)
			f.mu.Unlock()
		}
	}
}

// allFiles: a flush writes every pending file.
func allFiles(*pending.File) bool { return true }

// tick is the flush_interval's work (and shutdown's last flush).
func (f *flusher) tick() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.e
	var errs []error
	if e.pending != nil {
		f.writePending(allFiles)
	}
	// The extents before the files they describe (a power loss must not
	// keep lines of the combined file no extent names).
	if err := f.journal.Sync(); err != nil {
		e.metrics.FsyncFailed(journal.Dir, err) // counted with the files' fsyncs
		errs = append(errs, err)
	}
	done := uint64(0)
	if e.pending != nil {
		done = e.pending.Done()
	}
	if err := f.store.Flush(); err != nil { // counted and logged by the store
		errs = append(errs, err)
	} else if err := f.journal.MarkDone(done); err != nil {
		e.logs.warn("journal", "writing to the journal index failed", zap.Error(err))
		errs = append(errs, err)
	}
	smPos := ^uint64(0)
	if e.sm != nil {
		if err := e.sm.flush(); err != nil {
			e.logs.warn("service_map", "service map flush failed", zap.Error(err))
			errs = append(errs, err)
		}
		smPos = 0
		if p, ok := e.sm.committed(f.journal.ID()); ok {
			smPos = p
		}
	}
	if err := f.journal.Maintain(smPos); err != nil {
		e.logs.warn("journal", "starting a journal index segment failed", zap.Error(err))
	}
	return errors.Join(errs...)
}

// writePending appends the lines of the files due says to them, one
// append each; the rollouts.jsonl lines follow, once their rollout's file
// holds its lines.
func (f *flusher) writePending(due func(*pending.File) bool) {
	e, p := f.e, f.e.pending
	files := p.Take(due)
	if len(files) == 0 {
		return
	}
	var roots [][]byte
	var rootFiles []*pending.File
	var written []*pending.File
	rootSize, rootLines, lines, bytes := 0, 0, 0, 0
	for _, pf := range files {
		if pf.Bytes > 0 {
			err := f.store.Append(pf.Name, pf.Parts, pf.Bytes, capturedir.AppendOpts{Kind: fileKindRollout})
			switch {
			case err == nil:
				lines += pf.Lines
				bytes += pf.Bytes
			case errors.Is(err, capturedir.ErrUnsafeFile):
				// A symlink or other planted file under a rollout's name: never
				// written through; its spans are in the combined file.
				e.metrics.reject(rejectUnsafeFile, pf.Spans)
				e.logs.warn(rejectUnsafeFile, "per-rollout file is not a regular file; spans only in the combined file", zap.Error(err))
				if e.cfg.restOnly() && !f.toCombined(pf) { // as the group writer: it alone appends the combined file
					p.PutBack(pf) // retried by the next flush
					continue
				}
			default:
				e.metrics.writeFailed(fileKindRollout)
				e.logs.warn("rollout_write", "appending to a rollout file failed; its lines stay pending for the next flush", zap.String("file", pf.Name), zap.Error(err))
				p.PutBack(pf) // retried by the next flush
				continue
			}
		}
		if len(pf.Roots) > 0 {
			roots = append(roots, pf.Roots)
			rootFiles = append(rootFiles, pf)
			rootSize += len(pf.Roots)
			rootLines += pf.RootLines
			continue
		}
		written = append(written, pf)
	}
	if lines > 0 {
		e.metrics.written(fileKindRollout, lines, bytes)
	}
	if len(roots) > 0 {
		sort.Slice(rootFiles, func(i, j int) bool { return rootFiles[i].RootOrder < rootFiles[j].RootOrder })
		for i, pf := range rootFiles {
			roots[i] = pf.Roots
		}
		err := f.store.Append(e.cfg.RolloutsFile, roots, rootSize, capturedir.AppendOpts{Kind: fileKindRollouts})
		if err != nil {
			e.metrics.writeFailed(fileKindRollouts)
			e.logs.warn("rollouts_write", "appending to the rollouts file failed; its lines stay pending for the next flush", zap.Error(err))
			for _, pf := range rootFiles {
				p.WrittenParts(pf) // in its file already
				p.PutBack(pf)
			}
		} else {
			e.metrics.written(fileKindRollouts, rootLines, rootSize)
			written = append(written, rootFiles...)
		}
	}
	for _, pf := range written {
		if pf.Finished && pf.Name != "" && !p.IsPending(pf.Name) {
			f.store.Retire(pf.Name)
		}
	}
	p.Written(written)
}

// toCombined appends a pending rollout file's lines to the combined file
// instead (combined_spans rest: its rollout file may not be written, and
// the combined file did not take them) and reports whether it did.
func (f *flusher) toCombined(pf *pending.File) bool {
	e := f.e
	var err error
	if !e.commits.whenIdle(func() {
		err = f.store.Append(e.cfg.CombinedFile, pf.Parts, pf.Bytes, capturedir.AppendOpts{Kind: fileKindCombined, Rotate: e.rot})
	}) {
		return false // a push is writing: the next flush tries again
	}
	if err != nil {
		e.metrics.writeFailed(fileKindCombined)
		e.logs.warn("combined_write", "appending a rollout's lines to the combined file failed; they stay pending for the next flush", zap.Error(err))
		return false
	}
	e.metrics.written(fileKindCombined, pf.Lines, pf.Bytes)
	return true
}
