// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"sync"

	"golang.org/x/sys/unix"
)

// The lines of the rollout files and of rollouts.jsonl between the
// combined file (the journal) and their own files. The group writer adds a
// group's lines once they are in the combined file, in the journal's order;
// the flusher (flusher.go) takes them and appends each file once:
//
//   - every file once per flush_interval, in one sweep (a line waits at
//     most flush_interval, half of it on average): its lines, then the
//     rollouts.jsonl lines of a rollout whose root was written (and roots of
//     rollouts that have no file); then a finished rollout's descriptor is
//     closed;
//   - every file, early, when the pending bytes reach max_pending_bytes
//     (pushes wait while they stay there).
//
// A file whose append fails keeps its lines (ahead of those that came
// since) for the next flush. done is the journal position below which every
// line is in its file: the first sequence number still pending.

// pendingFile is one file's lines, in journal order.
type pendingFile struct {
	name      string   // the rollout file; "" for roots of rollouts without one
	parts     [][]byte // the lines, in chunks of the store
	chunks    []*pendingChunk
	bytes     int // of parts
	lines     int
	spans     int
	roots     []byte // rollouts.jsonl lines, appended after buf
	rootLines int
	firstSeq  uint64
	rootOrder uint64 // when its first root came: rollouts.jsonl keeps the journal's order
	finished  bool   // a root arrived: close the file once it is written
}

// pendingChunk is a block of memory the lines are copied into. Chunks are
// reused once every line in them was written, so a push does not grow and
// zero fresh memory. They are mapped outside the Go heap (anonymous mmap):
// lines held for up to flush_interval are live data, and on the heap the
// garbage collector's pacing would let the heap grow by as much again.
type pendingChunk struct {
	mem  []byte // the mapping (nil: a heap buffer for a line longer than a chunk)
	buf  []byte
	live int // bytes of lines not written yet
}

// pendingChunkBytes is the size of a chunk. Chunks are kept for reuse up
// to max_pending_bytes of them.
const pendingChunkBytes = 1 << 20

// newPendingChunk maps a chunk (on the heap when the mapping fails).
func newPendingChunk() *pendingChunk {
	mem, err := unix.Mmap(-1, 0, pendingChunkBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return &pendingChunk{buf: make([]byte, 0, pendingChunkBytes)}
	}
	return &pendingChunk{mem: mem, buf: mem[:0]}
}

type pendingStore struct {
	mu       sync.Mutex
	files    map[string]*pendingFile
	bytes    int
	addedSeq uint64 // every extent before it was added
	roots    uint64 // roots added
	cur      *pendingChunk
	free     []*pendingChunk
	maxFree  int
	metrics  *exporterMetrics
	drained  chan struct{} // closed and replaced whenever bytes drop
}

func newPendingStore(m *exporterMetrics, maxBytes int) *pendingStore {
	return &pendingStore{files: map[string]*pendingFile{}, metrics: m, drained: make(chan struct{}), maxFree: maxBytes/pendingChunkBytes + 1}
}

// fileLocked returns name's pending file, created with firstSeq seq.
func (p *pendingStore) fileLocked(name string, seq uint64) *pendingFile {
	pf := p.files[name]
	if pf == nil {
		pf = &pendingFile{name: name, firstSeq: seq}
		p.files[name] = pf
	}
	return pf
}

// copyLocked copies data into the current chunk (a new one when it is full)
// and adds it to pf's parts.
func (p *pendingStore) copyLocked(pf *pendingFile, data []byte) {
	c := p.cur
	if c == nil || cap(c.buf)-len(c.buf) < len(data) {
		switch n := len(p.free); {
		case len(data) > pendingChunkBytes:
			c = &pendingChunk{buf: make([]byte, 0, len(data))} // a line longer than a chunk
		case n > 0:
			c, p.free = p.free[n-1], p.free[:n-1]
		default:
			c = newPendingChunk()
		}
		if len(data) <= pendingChunkBytes {
			p.retireLocked(p.cur)
			p.cur = c
		}
	}
	start := len(c.buf)
	c.buf = append(c.buf, data...)
	c.live += len(data)
	part := c.buf[start:len(c.buf):len(c.buf)]
	if n := len(pf.parts); n > 0 && pf.chunks[n-1] == c && adjacent(pf.parts[n-1], c.buf, start) {
		pf.parts[n-1] = c.buf[start-len(pf.parts[n-1]) : len(c.buf) : len(c.buf)]
	} else {
		pf.parts = append(pf.parts, part)
		pf.chunks = append(pf.chunks, c)
	}
	pf.bytes += len(data)
}

// adjacent reports whether prev ends where buf[start:] begins.
func adjacent(prev, buf []byte, start int) bool {
	return len(prev) <= start && &buf[start-len(prev)] == &prev[0]
}

// retireLocked puts chunk c back to the free list (or unmaps it, beyond
// the bound) once nothing in it is pending and it is not the current one.
func (p *pendingStore) retireLocked(c *pendingChunk) {
	if c == nil || c.live > 0 || c == p.cur || cap(c.buf) != pendingChunkBytes {
		return
	}
	if len(p.free) >= p.maxFree {
		if c.mem != nil {
			_ = unix.Munmap(c.mem)
			c.mem, c.buf = nil, nil
		}
		return
	}
	c.buf = c.buf[:0]
	p.free = append(p.free, c)
}

// dropPartsLocked forgets pf's lines (written): their chunks may be reused.
func (p *pendingStore) dropPartsLocked(pf *pendingFile) int {
	n := pf.bytes
	for i, part := range pf.parts {
		c := pf.chunks[i]
		c.live -= len(part)
		if c.live == 0 {
			p.retireLocked(c)
		}
	}
	clear(pf.parts)
	clear(pf.chunks)
	pf.parts, pf.chunks, pf.bytes = pf.parts[:0], pf.chunks[:0], 0
	return n
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
		a.p.copyLocked(pf, arena[sg.start:sg.end])
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
	pf.finished = true
}

// addGroup runs fill with an adder for extent seq; it reports whether the
// bound is reached (the flusher is then woken early).
func (p *pendingStore) addGroup(seq uint64, bound int, fill func(a *adder)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := adder{p: p, seq: seq}
	fill(&a)
	p.bytes += a.bytes
	p.addedSeq = seq + 1
	p.metrics.pendingChanged(a.bytes)
	return p.bytes >= bound
}

// take removes and returns the files to flush (those due says).
func (p *pendingStore) take(due func(*pendingFile) bool) []*pendingFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*pendingFile
	for name, pf := range p.files {
		if due(pf) {
			out = append(out, pf)
			delete(p.files, name)
		}
	}
	return out
}

// written gives back the memory of files written: their bytes leave the
// gauge and their chunks are reused.
func (p *pendingStore) written(files []*pendingFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pf := range files {
		n += p.dropPartsLocked(pf) + len(pf.roots)
		pf.roots = nil
	}
	p.dropLocked(n)
}

// writtenParts forgets the lines of pf, which its file now holds (its roots
// stay owed).
func (p *pendingStore) writtenParts(pf *pendingFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(p.dropPartsLocked(pf))
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
	if cur == nil {
		return
	}
	if len(pf.roots) == 0 {
		pf.rootOrder = cur.rootOrder
	}
	pf.parts = append(pf.parts, cur.parts...)
	pf.chunks = append(pf.chunks, cur.chunks...)
	pf.bytes += cur.bytes
	pf.lines += cur.lines
	pf.spans += cur.spans
	pf.roots = append(pf.roots, cur.roots...)
	pf.rootLines += cur.rootLines
	pf.finished = pf.finished || cur.finished
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
