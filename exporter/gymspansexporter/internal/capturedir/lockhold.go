// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/eintr"
)

// Keeping a file's lock between appends (lock_hold).
//
// design §5.1 appends each batch under an exclusive flock. Taking and giving
// back the lock of every file of every batch is two syscalls per file and
// batch beside its fstat and write; with a hundred rollouts in a batch that
// is half of a push's syscalls, and over NFS each lock is a round trip to
// the server. With lock_hold > 0 the store keeps a file's lock after an
// append for at most lock_hold, so back-to-back batches to the same file take
// it once. While we hold it no process honouring the lock can have appended
// to or rotated the file, so the combined file's rotation check (an
// fstatat) is skipped too; the fstat stays, for a file removed by hand and
// for writers that do not lock.
//
// Another collector sharing the capture dir waits at most lock_hold (plus
// the group being written) for a lock we keep:
//   - the writer gives back every lock older than lock_hold after each
//     group (ExpireKept), and a timer does it once no push is in flight
//     (idle; it runs as the writer, through exclusive);
//   - the writer never waits for a lock while keeping others: when a lock
//     is taken elsewhere (LOCK_NB fails) it first gives back all it keeps.
//     Two collectors that each keep one file and wait for the other's would
//     otherwise wait forever.
//
// The kept list belongs to the writer (the holder of groupCommit's write
// token, or the timer callback inside exclusive). A handle's locked flag is
// written by the writer while the handle is pinned and, under s.mu, when its
// descriptor is closed (which gives the lock back).

// keptLock is a lock the store keeps: the handle, which of its locks, and
// when it was taken. Entries are in the order the locks were taken; an entry
// whose lock was given back since (seq differs or not locked) is skipped.
type keptLock struct {
	h   *handle
	seq uint64
	at  time.Time
}

// lockForAppend takes h's exclusive lock. The writer that keeps locks (hold)
// never blocks while the store keeps other locks; an append that keeps none
// (the rollout flusher's) holds no other lock while it waits.
func (s *Store) lockForAppend(h *handle, hold bool) error {
	if hold && s.holdFor > 0 {
		err := eintr.Flock(h.fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EWOULDBLOCK {
			return err
		}
		s.giveBackKept(time.Time{})
	}
	return eintr.Flock(h.fd, unix.LOCK_EX)
}

// keep records that the lock just taken on h is kept after the append.
func (s *Store) keep(h *handle, now time.Time) {
	s.lockSeq++
	h.locked, h.lockSeq = true, s.lockSeq
	s.kept = append(s.kept, keptLock{h: h, seq: s.lockSeq, at: now})
}

// unlockNow gives back h's lock (h is pinned by the caller).
func (s *Store) unlockNow(h *handle) {
	_ = eintr.Flock(h.fd, unix.LOCK_UN)
	h.locked = false
}

// giveBackKept gives back every kept lock taken at or before cutoff (every
// one when cutoff is zero) and returns when the oldest lock still kept was
// taken (zero when none is).
func (s *Store) giveBackKept(cutoff time.Time) time.Time {
	n := 0
	for _, k := range s.kept {
		if !cutoff.IsZero() && k.at.After(cutoff) {
			break
		}
		s.mu.Lock()
		// A closed descriptor gave its lock back (and cleared locked).
		if k.h.locked && k.h.lockSeq == k.seq {
			s.unlockNow(k.h)
		}
		s.mu.Unlock()
		n++
	}
	clear(s.kept[:n])
	s.kept = s.kept[:copy(s.kept, s.kept[n:])]
	if len(s.kept) == 0 {
		return time.Time{}
	}
	return s.kept[0].at
}

// HoldLocks turns lock_hold on; exclusive runs f as the writer when no
// push is writing, and reports whether it did.
func (s *Store) HoldLocks(holdFor time.Duration, exclusive func(f func()) bool) {
	if holdFor <= 0 {
		return
	}
	s.holdFor, s.exclusive = holdFor, exclusive
	s.holdTimer = time.AfterFunc(time.Hour, s.onHoldTimer)
	s.holdTimer.Stop()
}

// ExpireKept is run by the writer after each group: it gives back the locks
// kept for lock_hold or longer, and returns when the oldest lock still kept
// was taken (zero when none is).
func (s *Store) ExpireKept(now time.Time) time.Time {
	return s.giveBackKept(now.Add(-s.holdFor))
}

// Idle is called by the push that leaves the exporter with none in flight:
// the kept locks are given back lock_hold from now unless a push comes
// first. While pushes keep coming, each postpones the timer and the writer
// expires locks after each group, so a busy exporter is never woken by it.
func (s *Store) Idle() {
	if s.holdTimer != nil {
		s.holdTimer.Reset(s.holdFor)
	}
}

// onHoldTimer gives back the expired locks if no push is writing, and comes
// again for the locks kept since. If a push is writing, it does nothing: the
// writer expires locks after its group, and the last push out calls idle.
func (s *Store) onHoldTimer() {
	s.mu.Lock()
	closed := s.closed // close gave every lock back
	s.mu.Unlock()
	if closed {
		return
	}
	s.exclusive(func() {
		now := time.Now()
		if oldest := s.ExpireKept(now); !oldest.IsZero() {
			s.holdTimer.Reset(oldest.Add(s.holdFor).Sub(now))
		}
	})
}

// KeptLocks is the number of locks kept and when the oldest was taken
// (zero when none is). Called as the writer (inside exclusive).
func (s *Store) KeptLocks() (int, time.Time) {
	if len(s.kept) == 0 {
		return 0, time.Time{}
	}
	return len(s.kept), s.kept[0].at
}
