// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"sync"
)

// The lines of the rollout files and of rollouts.jsonl between the
// combined file (the journal) and their own files. The group writer adds a
// group's lines once they are in the combined file, in the journal's order;
// the flusher (flusher.go) takes them and appends each file once:
//
//   - every flush_interval, every file with lines;
//   - at once, the files of rollouts whose root was written (their file,
//     then the root's rollouts.jsonl line; then the file's descriptor is
//     closed), and roots of rollouts that have no file;
//   - every file, early, when the pending bytes reach max_pending_bytes
//     (pushes wait while they stay there).
//
// A file whose append fails keeps its lines (ahead of those that came
// since) for the next flush. done is the journal position below which every
// line is in its file: the first sequence number still pending.

// pendingFile is one file's lines, in journal order.
type pendingFile struct {
	name      string // the rollout file; "" for roots of rollouts without one
	buf       []byte
	lines     int
	spans     int
	roots     []byte // rollouts.jsonl lines, appended after buf
	rootLines int
	firstSeq  uint64
	rootOrder uint64 // when its first root came: rollouts.jsonl keeps the journal's order
	finished  bool   // a root arrived: flush now, then close the file
}

func (pf *pendingFile) size() int { return len(pf.buf) + len(pf.roots) }

type pendingStore struct {
	mu       sync.Mutex
	files    map[string]*pendingFile
	bytes    int
	addedSeq uint64 // every extent before it was added
	finished int    // files with finished set
	roots    uint64 // roots added
	free     [][]byte
	metrics  *exporterMetrics
	drained  chan struct{} // closed and replaced whenever bytes drop
}

// maxFreeBuffers bounds the line buffers kept for reuse; maxFreeBufferBytes
// the size of one.
const (
	maxFreeBuffers     = 4096
	maxFreeBufferBytes = 1 << 20
)

func newPendingStore(m *exporterMetrics) *pendingStore {
	return &pendingStore{files: map[string]*pendingFile{}, metrics: m, drained: make(chan struct{})}
}

// fileLocked returns name's pending file, created with firstSeq seq.
func (p *pendingStore) fileLocked(name string, seq uint64) *pendingFile {
	pf := p.files[name]
	if pf == nil {
		pf = &pendingFile{name: name, firstSeq: seq}
		if n := len(p.free); n > 0 {
			pf.buf, p.free = p.free[n-1], p.free[:n-1]
		}
		p.files[name] = pf
	}
	return pf
}

// adder adds one group's lines under the store's lock.
type adder struct {
	p     *pendingStore
	seq   uint64
	bytes int
}

// add gathers the lines of one rollout file of the group (segments of arena).
func (a *adder) add(name string, arena []byte, segs []segment, lines, spans int) {
	pf := a.p.fileLocked(name, a.seq)
	for _, sg := range segs {
		pf.buf = append(pf.buf, arena[sg.start:sg.end]...)
		a.bytes += sg.end - sg.start
	}
	pf.lines += lines
	pf.spans += spans
}

// root gathers a rollouts.jsonl line (none when rollouts_file is off),
// written after name's lines (name "" for a rollout that has no file of its
// own), and marks name finished.
func (a *adder) root(name string, line []byte) {
	pf := a.p.fileLocked(name, a.seq)
	if len(line) > 0 {
		if len(pf.roots) == 0 {
			a.p.roots++
			pf.rootOrder = a.p.roots
		}
		pf.roots = append(pf.roots, line...)
		pf.rootLines++
		a.bytes += len(line)
	}
	if !pf.finished {
		pf.finished = true
		a.p.finished++
	}
}

// addGroup runs fill with an adder for extent seq; it reports whether a
// flush is due (a root arrived, or the bound is reached).
func (p *pendingStore) addGroup(seq uint64, bound int, fill func(a *adder)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := adder{p: p, seq: seq}
	fill(&a)
	p.bytes += a.bytes
	p.addedSeq = seq + 1
	p.metrics.pendingChanged(a.bytes)
	return p.finished > 0 || p.bytes >= bound
}

// take removes and returns the files to flush: every file with all, else
// the finished ones.
func (p *pendingStore) take(all bool) []*pendingFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*pendingFile
	for name, pf := range p.files {
		if all || pf.finished {
			out = append(out, pf)
			delete(p.files, name)
			if pf.finished {
				p.finished--
			}
		}
	}
	return out
}

// written gives back the memory of files written: their bytes leave the
// gauge and their buffers are reused.
func (p *pendingStore) written(files []*pendingFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pf := range files {
		n += pf.size()
		if len(p.free) < maxFreeBuffers && cap(pf.buf) <= maxFreeBufferBytes {
			p.free = append(p.free, pf.buf[:0])
		}
		pf.buf, pf.roots = nil, nil
	}
	p.dropLocked(n)
}

// release takes n bytes written off the gauge.
func (p *pendingStore) release(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(n)
}

func (p *pendingStore) dropLocked(n int) {
	if n == 0 {
		return
	}
	p.bytes -= n
	p.metrics.pendingChanged(-n)
	close(p.drained)
	p.drained = make(chan struct{})
}

// putBack returns what a failed append did not write, ahead of what came
// for the same file since. Its roots stay owed with it.
func (p *pendingStore) putBack(pf *pendingFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.files[pf.name]
	p.files[pf.name] = pf
	if pf.finished {
		p.finished++
	}
	if cur == nil {
		return
	}
	if len(pf.roots) == 0 {
		pf.rootOrder = cur.rootOrder
	}
	pf.buf = append(pf.buf, cur.buf...)
	pf.lines += cur.lines
	pf.spans += cur.spans
	pf.roots = append(pf.roots, cur.roots...)
	pf.rootLines += cur.rootLines
	if cur.finished {
		if pf.finished {
			p.finished--
		}
		pf.finished = true
	}
}

// isPending reports whether name has lines waiting.
func (p *pendingStore) isPending(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files[name] != nil
}

// done is the journal position below which every line is in its file.
func (p *pendingStore) done() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.addedSeq
	for _, pf := range p.files {
		d = min(d, pf.firstSeq)
	}
	return d
}

// size is the bytes pending.
func (p *pendingStore) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// waitBelow returns once fewer than bound bytes are pending, or with the
// context's error.
func (p *pendingStore) waitBelow(ctx context.Context, bound int, wake func()) error {
	for {
		p.mu.Lock()
		if p.bytes < bound {
			p.mu.Unlock()
			return nil
		}
		ch := p.drained
		p.mu.Unlock()
		wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
