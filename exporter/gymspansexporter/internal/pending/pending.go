// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package pending holds the lines of the rollout files and of
// rollouts.jsonl between the
// combined file (the journal) and their own files. The group writer adds a
// group's lines once they are in the combined file, in the journal's order;
// the exporter's flusher takes them and appends each file once:
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
// since) for the next flush. Done is the journal position below which every
// line is in its file: the first sequence number still pending.
package pending // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/pending"

import (
	"context"
	"sync"

	"golang.org/x/sys/unix"
)

// File is one file's lines, in journal order.
type File struct {
	Name      string   // the rollout file; "" for roots of rollouts without one
	Parts     [][]byte // the lines, in chunks of the store
	chunks    []*chunk
	Bytes     int // of Parts
	Lines     int
	Spans     int
	Roots     []byte // rollouts.jsonl lines, written after Parts
	RootLines int
	firstSeq  uint64
	RootOrder uint64 // when its first root came: rollouts.jsonl keeps the journal's order
	Finished  bool   // a root arrived: close the file once it is written
}

// chunk is a block of memory the lines are copied into. Chunks are
// reused once every line in them was written, so a push does not grow and
// zero fresh memory. They are mapped outside the Go heap (anonymous mmap):
// lines held for up to flush_interval are live data, and on the heap the
// garbage collector's pacing would let the heap grow by as much again.
type chunk struct {
	mem  []byte // the mapping (nil: a heap buffer for a line longer than a chunk)
	buf  []byte
	live int // bytes of lines not written yet
}

// chunkBytes is the size of a chunk. Chunks are kept for reuse up
// to max_pending_bytes of them.
const chunkBytes = 1 << 20

// newChunkLocked maps a chunk (on the heap when the mapping fails).
func (p *Store) newChunkLocked() *chunk {
	mem, err := unix.Mmap(-1, 0, chunkBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return &chunk{buf: make([]byte, 0, chunkBytes)}
	}
	p.mapped++
	return &chunk{mem: mem, buf: mem[:0]}
}

// unmapLocked gives chunk c's mapping back to the system: the garbage
// collector never frees it.
func (p *Store) unmapLocked(c *chunk) {
	if c.mem == nil {
		return
	}
	_ = unix.Munmap(c.mem)
	c.mem, c.buf = nil, nil
	p.mapped--
}

// Store is the lines waiting for their files; it owns its lock.
type Store struct {
	mu       sync.Mutex
	files    map[string]*File
	bytes    int
	addedSeq uint64 // every extent before it was added
	roots    uint64 // roots added
	cur      *chunk
	free     []*chunk
	maxFree  int
	changed  func(delta int) // told every change of the bytes pending
	drained  chan struct{}   // closed and replaced whenever bytes drop
	mapped   int             // chunks mapped and not unmapped yet
}

// NewStore is an empty store that keeps up to maxBytes (max_pending_bytes)
// of chunks for reuse and tells changed every change of its size.
func NewStore(changed func(delta int), maxBytes int) *Store {
	return &Store{files: map[string]*File{}, changed: changed, drained: make(chan struct{}), maxFree: maxBytes/chunkBytes + 1}
}

// fileLocked returns name's pending file, created with firstSeq seq.
func (p *Store) fileLocked(name string, seq uint64) *File {
	pf := p.files[name]
	if pf == nil {
		pf = &File{Name: name, firstSeq: seq}
		p.files[name] = pf
	}
	return pf
}

// copyLocked copies data into the current chunk (a new one when it is full)
// and adds it to pf's parts.
func (p *Store) copyLocked(pf *File, data []byte) {
	if len(data) == 0 {
		// No part: an empty one would hold a chunk with nothing live, which
		// its drop would retire a second time.
		return
	}
	c := p.cur
	if c == nil || cap(c.buf)-len(c.buf) < len(data) {
		switch n := len(p.free); {
		case len(data) > chunkBytes:
			c = &chunk{buf: make([]byte, 0, len(data))} // a line longer than a chunk
		case n > 0:
			c, p.free = p.free[n-1], p.free[:n-1]
		default:
			c = p.newChunkLocked()
		}
		if len(data) <= chunkBytes {
			// The chunk it replaces is retired once it is no longer current
			// (retireLocked keeps the current one).
			prev := p.cur
			p.cur = c
			p.retireLocked(prev)
		}
	}
	start := len(c.buf)
	c.buf = append(c.buf, data...)
	c.live += len(data)
	part := c.buf[start:len(c.buf):len(c.buf)]
	if n := len(pf.Parts); n > 0 && pf.chunks[n-1] == c && adjacent(pf.Parts[n-1], c.buf, start) {
		pf.Parts[n-1] = c.buf[start-len(pf.Parts[n-1]) : len(c.buf) : len(c.buf)]
	} else {
		pf.Parts = append(pf.Parts, part)
		pf.chunks = append(pf.chunks, c)
	}
	pf.Bytes += len(data)
}

// adjacent reports whether prev ends where buf[start:] begins.
func adjacent(prev, buf []byte, start int) bool {
	return len(prev) <= start && &buf[start-len(prev)] == &prev[0]
}

// retireLocked puts chunk c back to the free list (or unmaps it, beyond
// the bound) once nothing in it is pending and it is not the current one.
func (p *Store) retireLocked(c *chunk) {
	if c == nil || c.live > 0 || c == p.cur || cap(c.buf) != chunkBytes {
		return
	}
	if len(p.free) >= p.maxFree {
		p.unmapLocked(c)
		return
	}
	c.buf = c.buf[:0]
	p.free = append(p.free, c)
}

// dropPartsLocked forgets pf's lines (written): their chunks may be reused.
func (p *Store) dropPartsLocked(pf *File) int {
	n := pf.Bytes
	for i, part := range pf.Parts {
		c := pf.chunks[i]
		c.live -= len(part)
		if c.live == 0 {
			p.retireLocked(c)
		}
	}
	clear(pf.Parts)
	clear(pf.chunks)
	pf.Parts, pf.chunks, pf.Bytes = pf.Parts[:0], pf.chunks[:0], 0
	return n
}

// Adder adds one group's lines under the store's lock.
type Adder struct {
	p     *Store
	seq   uint64
	bytes int
}

// File returns name's pending file, for the group's lines of it.
func (a *Adder) File(name string) *File { return a.p.fileLocked(name, a.seq) }

// Copy copies a piece of f's lines into the store.
func (a *Adder) Copy(f *File, data []byte) {
	a.p.copyLocked(f, data)
	a.bytes += len(data)
}

// Count adds the lines and spans the group's pieces of f hold.
func (a *Adder) Count(f *File, lines, spans int) {
	f.Lines += lines
	f.Spans += spans
}

// Root gathers a rollouts.jsonl line (none when rollouts_file is off),
// written after name's lines (name "" for a rollout that has no file of its
// own), and marks name finished.
func (a *Adder) Root(name string, line []byte) {
	pf := a.p.fileLocked(name, a.seq)
	if len(line) > 0 {
		if len(pf.Roots) == 0 {
			a.p.roots++
			pf.RootOrder = a.p.roots
		}
		pf.Roots = append(pf.Roots, line...)
		pf.RootLines++
		a.bytes += len(line)
	}
	pf.Finished = true
}

// AddGroup runs fill with an Adder for extent seq; it reports whether the
// bound is reached (the flusher is then woken early).
func (p *Store) AddGroup(seq uint64, bound int, fill func(a *Adder)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := Adder{p: p, seq: seq}
	fill(&a)
	p.bytes += a.bytes
	p.addedSeq = seq + 1
	p.changed(a.bytes)
	return p.bytes >= bound
}

// Take removes and returns the files to flush (those due says).
func (p *Store) Take(due func(*File) bool) []*File {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*File
	for name, pf := range p.files {
		if due(pf) {
			out = append(out, pf)
			delete(p.files, name)
		}
	}
	return out
}

// Written gives back the memory of files written: their bytes leave the
// gauge and their chunks are reused.
func (p *Store) Written(files []*File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pf := range files {
		n += p.dropPartsLocked(pf) + len(pf.Roots)
		pf.Roots = nil
	}
	p.dropLocked(n)
}

// WrittenParts forgets the lines of pf, which its file now holds (its roots
// stay owed, to be put back).
func (p *Store) WrittenParts(pf *File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(p.dropPartsLocked(pf))
	pf.Lines, pf.Spans = 0, 0
}

func (p *Store) dropLocked(n int) {
	if n == 0 {
		return
	}
	p.bytes -= n
	p.changed(-n)
	close(p.drained)
	p.drained = make(chan struct{})
}

// PutBack returns what a failed append did not write, ahead of what came
// for the same file since. Its roots stay owed with it.
func (p *Store) PutBack(pf *File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.files[pf.Name]
	p.files[pf.Name] = pf
	if cur == nil {
		return
	}
	if len(pf.Roots) == 0 {
		pf.RootOrder = cur.RootOrder
	}
	pf.Parts = append(pf.Parts, cur.Parts...)
	pf.chunks = append(pf.chunks, cur.chunks...)
	pf.Bytes += cur.Bytes
	pf.Lines += cur.Lines
	pf.Spans += cur.Spans
	pf.Roots = append(pf.Roots, cur.Roots...)
	pf.RootLines += cur.RootLines
	pf.Finished = pf.Finished || cur.Finished
}

// IsPending reports whether name has lines waiting.
func (p *Store) IsPending(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files[name] != nil
}

// Done is the journal position below which every line is in its file.
func (p *Store) Done() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.addedSeq
	for _, pf := range p.files {
		d = min(d, pf.firstSeq)
	}
	return d
}

// Size is the bytes pending.
func (p *Store) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// WaitBelow returns once fewer than bound bytes are pending, or with the
// context's error.
func (p *Store) WaitBelow(ctx context.Context, bound int, wake func()) error {
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

// Close unmaps every chunk of the store: those kept for reuse, the current
// one and those of lines still pending (which the journal keeps for the
// next start). The exporter's shutdown calls it after its last flush; the
// store is not used after it. Without it each exporter that ever ran would
// keep up to max_pending_bytes mapped for the life of the process.
func (p *Store) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.free {
		p.unmapLocked(c)
	}
	if p.cur != nil {
		p.unmapLocked(p.cur)
	}
	for _, pf := range p.files {
		for _, c := range pf.chunks {
			p.unmapLocked(c)
		}
	}
	p.free, p.cur, p.files = nil, nil, map[string]*File{}
}
