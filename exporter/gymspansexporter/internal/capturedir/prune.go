// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// pruner removes the backups a rotation left beyond those kept, in a
// goroutine of its own, as lumberjack (upstream's file exporter) does:
// finding them lists the capture dir, which holds every rollout's files,
// and a rotation runs inside the writer's append (bench/RESULTS.md,
// "2026-12-03 08:05 UTC"). One goroutine at a time, started when asked and
// gone when nothing is left to prune.
type pruner struct {
	prune func(name string, keep int) // Store.pruneBackups; tests hold it
	mu    sync.Mutex
	idle  sync.Cond      // on mu: signalled when busy turns false
	want  map[string]int // file name → backups to keep, asked and not begun
	busy  bool           // a goroutine is pruning
	done  bool           // the store is closing: nothing more is pruned
}

// ask has name's backups beyond the newest keep removed soon (after the
// store closed, at the next rotation of a later store).
func (p *pruner) ask(name string, keep int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	if p.want == nil {
		p.want = map[string]int{}
	}
	p.want[name] = keep
	if !p.busy {
		p.busy = true
		go p.run()
	}
}

func (p *pruner) run() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.want) > 0 {
		for name, keep := range p.want {
			delete(p.want, name)
			p.mu.Unlock()
			p.prune(name, keep)
			p.mu.Lock()
		}
	}
	p.busy = false
	p.idle.Broadcast()
}

// wait returns once nothing is left to prune (every prune asked for
// before it is done).
func (p *pruner) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.busy {
		p.idle.Wait()
	}
}

// stop waits for the prunes asked for and refuses any later one: the store
// is about to close the dir descriptor they unlink through.
func (p *pruner) stop() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	p.wait()
}

// WaitPruned returns once the backups of every rotation so far are pruned.
// Close waits for them too.
func (s *Store) WaitPruned() { s.pruner.wait() }

// pruneBackups keeps the newest keep backups of name (0 keeps none). It
// lists the names alone, unsorted (os.ReadDir would make an entry for each
// of every rollout's files, and sort them all).
func (s *Store) pruneBackups(name string, keep int) {
	names, err := ReadDirNames(s.dirFD, s.dirPath)
	if err != nil {
		return
	}
	var backups []string
	for _, n := range names {
		if IsBackupName(name, n) {
			backups = append(backups, n)
		}
	}
	if len(backups) <= keep {
		return
	}
	sort.Strings(backups) // the time layout sorts lexically
	for _, n := range backups[:len(backups)-keep] {
		_ = unix.Unlinkat(s.dirFD, n, 0)
	}
}
