// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"sync"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
)

// groupCommit writes the encoded batches of concurrent pushes together: one
// append per file for all of them, instead of one per file and batch.
//
// A file append has a fixed cost (flock, fstat, writev, unlock, and the
// filesystem's own per-write work) that dwarfs its bytes when a batch holds
// a few spans per rollout, which is what Gym's processes send. While one
// push is writing, the pushes that arrive queue their batches; when it is
// done, the first of them becomes the writer and takes the whole queue. A
// push returns only after its own lines were written, so the design §5.1
// guarantee (write(2) before ConsumeTraces returns) is kept, and a lone
// push pays a mutex and a map of its files. Each push writes at most one
// group, so no push waits for more than the group in flight and its own.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*batch
	spare   []*batch
	writing bool
	// byName merges the files of a group (the writer's scratch).
	byName map[string]*groupFile
	order  []*groupFile
	free   []*groupFile
	iovs   [][]byte
	// afterGroup, when set, runs after each group is written, still as the
	// writer (the file store gives back locks kept too long), and before
	// the group's pushes are woken: a syscall made while woken goroutines
	// wait in the writer's run queue lets the runtime hand its P to another
	// thread, and the woken callers then thrash the cores.
	afterGroup func()
	// queued, when set (tests), is told the queue length each time a push
	// queues behind a writer.
	queued func(n int)
}

// groupFile is one file's share of a group: the batches' parts in order.
type groupFile struct {
	name  string
	rot   *capturedir.Rotation
	parts []*fileBatch
	arena [][]byte // the arena of each part's batch
	size  int
}

// commit has writeGroup write b together with the batches of concurrent
// pushes, and returns when b's lines are written or failed.
func (g *groupCommit) commit(b *batch, writeGroup func(group []*batch)) {
	g.mu.Lock()
	g.queue = append(g.queue, b)
	if g.writing {
		if g.queued != nil {
			g.queued(len(g.queue))
		}
		g.mu.Unlock()
		if lead := <-b.wake; !lead {
			return // written by another push
		}
		g.mu.Lock()
	}
	g.writing = true
	group := g.queue
	g.queue, g.spare = g.spare[:0], nil
	g.mu.Unlock()

	writeGroup(group)
	if g.afterGroup != nil {
		g.afterGroup()
	}
	for _, o := range group {
		if o != b {
			o.wake <- false
		}
	}

	g.mu.Lock()
	clear(group)
	g.spare = group[:0]
	g.handOffLocked()
	g.mu.Unlock()
}

// handOffLocked passes the write token to the first queued push, if any.
func (g *groupCommit) handOffLocked() {
	if len(g.queue) > 0 {
		g.queue[0].wake <- true // the next writer takes what queued meanwhile
	} else {
		g.writing = false
	}
}

// whenIdle runs f as the writer if no push is writing, and reports whether
// it did. Pushes that arrive meanwhile queue as they do behind a writer.
func (g *groupCommit) whenIdle(f func()) bool {
	g.mu.Lock()
	if g.writing {
		g.mu.Unlock()
		return false
	}
	g.writing = true
	g.mu.Unlock()
	f()
	g.mu.Lock()
	g.handOffLocked()
	g.mu.Unlock()
	return true
}

// write appends each file of the group that keep accepts once, in the
// order the files first appear, with the batches' bytes in queue order, and
// gives every batch part the result of its file's append. The writer calls
// it (it uses the writer's scratch).
func (g *groupCommit) write(group []*batch, keep func(fb *fileBatch) bool, write func(string, [][]byte, int, *capturedir.Rotation) error, rotFor func(string) *capturedir.Rotation) {
	if g.byName == nil {
		g.byName = map[string]*groupFile{}
	}
	for _, b := range group {
		for _, fb := range b.files {
			if fb.size == 0 || !keep(fb) {
				continue
			}
			gf := g.byName[fb.name]
			if gf == nil {
				if n := len(g.free); n > 0 {
					gf, g.free = g.free[n-1], g.free[:n-1]
				} else {
					gf = &groupFile{}
				}
				gf.name, gf.rot = fb.name, rotFor(fb.kind)
				g.byName[fb.name] = gf
				g.order = append(g.order, gf)
			}
			gf.parts = append(gf.parts, fb)
			gf.arena = append(gf.arena, b.arena)
			gf.size += fb.size
		}
	}
	for _, gf := range g.order {
		g.iovs = g.iovs[:0]
		for i, fb := range gf.parts {
			g.iovs = appendSegs(g.iovs, gf.arena[i], fb)
		}
		err := write(gf.name, g.iovs, gf.size, gf.rot)
		for _, fb := range gf.parts {
			fb.err = err
		}
		clear(gf.parts)
		clear(gf.arena)
		gf.parts, gf.arena, gf.size = gf.parts[:0], gf.arena[:0], 0
		g.free = append(g.free, gf)
	}
	clear(g.iovs)
	clear(g.byName)
	clear(g.order)
	g.order = g.order[:0]
}

// appendSegs appends fb's byte ranges of arena.
func appendSegs(iovs [][]byte, arena []byte, fb *fileBatch) [][]byte {
	for _, sg := range fb.segs {
		iovs = append(iovs, arena[sg.start:sg.end])
	}
	return iovs
}
