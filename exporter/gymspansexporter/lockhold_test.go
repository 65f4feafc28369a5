// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/eintr"
)

// openAsOther opens a file of the capture dir as another collector would:
// flock locks belong to an open file description, so a lock taken through
// it contends with the exporter's as another process's would.
func openAsOther(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// keptLocks is the number of locks the store keeps, read as the writer.
func keptLocks(t *testing.T, e *spansExporter) int {
	t.Helper()
	n := -1
	require.True(t, e.commits.whenIdle(func() { n, _ = e.store.KeptLocks() }))
	return n
}

func tryLock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// lockWithin takes f's lock, blocking, and fails the test if it is not
// granted within d (a lock kept forever would hang the test otherwise).
func lockWithin(t *testing.T, f *os.File, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- eintr.Flock(int(f.Fd()), unix.LOCK_EX) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(d):
		t.Fatalf("lock of %s not given back within %v", f.Name(), d)
	}
}

// TestLockHoldKeepsLocks: with lock_hold, a file's lock stays with the
// exporter after the push (another opener cannot take it), two pushes take
// it once, and the locks it keeps until then are given back by shutdown.
// With the combined file, the pushes write (and keep the lock of) only it;
// the flusher's appends give every lock back at once, one lock per append.
func TestLockHoldKeepsLocks(t *testing.T) {
	t.Run("write-through", func(t *testing.T) {
		testLockHoldKeepsLocks(t, "", map[string]int{"0-0.spans.jsonl": 6, "0-1.spans.jsonl": 6, "rollouts.jsonl": 4}, nil)
	})
	t.Run("journal", func(t *testing.T) {
		testLockHoldKeepsLocks(t, "spans.jsonl", map[string]int{"spans.jsonl": 12}, map[string]int{"0-0.spans.jsonl": 6, "0-1.spans.jsonl": 6})
	})
}

// testLockHoldKeepsLocks pushes twice; kept are the files whose locks the
// pushes keep, flushed those the flusher writes afterwards (then the pushes
// have no root, which would have their rollout written at once).
func testLockHoldKeepsLocks(t *testing.T, combined string, kept, flushed map[string]int) {
	e, tel := newTestExporter(t, func(c *Config) { shared(c); c.CombinedFile = combined; c.FlushInterval = time.Hour })
	e.cfg.LockHold = time.Hour // past what Validate allows: the timer stays out of the test
	startExporter(t, e)
	dir := e.cfg.CaptureDir
	for seed := uint64(1); seed <= 2; seed++ {
		td := gymTraces(seed, 2, 3)
		if flushed != nil {
			td = withoutRoots(td)
		}
		require.NoError(t, e.pushTraces(context.Background(), td))
	}
	assert.Equal(t, len(kept), keptLocks(t, e), "each file the pushes write, once")
	if flushed != nil {
		writePendingNow(t, e)
		for n, want := range flushed {
			assert.NoError(t, tryLock(openAsOther(t, filepath.Join(dir, n))), "%s: the flusher keeps no lock", n)
			assert.Len(t, readLines(t, filepath.Join(dir, n)), want, n)
		}
		locks, appends := metricByAttr(t, tel, metricLocks, "file"), metricByAttr(t, tel, metricAppends, "file")
		assert.Equal(t, int64(2), appends[fileKindRollout], "one append per rollout file")
		assert.Equal(t, appends[fileKindRollout], locks[fileKindRollout], "one lock per append")
		assert.Equal(t, int64(1), locks[fileKindCombined], "the combined file's lock kept between the pushes")
	}
	lines := kept
	for n := range lines {
		assert.ErrorIs(t, tryLock(openAsOther(t, filepath.Join(dir, n))), unix.EWOULDBLOCK, n)
	}
	require.NoError(t, e.shutdown(context.Background()))
	for n, want := range lines {
		assert.NoError(t, tryLock(openAsOther(t, filepath.Join(dir, n))), n)
		assert.Len(t, readLines(t, filepath.Join(dir, n)), want, n)
	}
}

// TestLockHoldGivenBackWhenIdle: when no push follows, the kept locks are
// given back by the timer, so another collector waiting for one gets it.
func TestLockHoldGivenBackWhenIdle(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { shared(c); c.LockHold = 20 * time.Millisecond })
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(1, 2, 3)))
	for _, n := range []string{"0-0.spans.jsonl", "spans.jsonl", "rollouts.jsonl"} {
		lockWithin(t, openAsOther(t, filepath.Join(e.cfg.CaptureDir, n)), 10*time.Second)
	}
}

// TestLockHoldExpiry: after a group, the writer gives back exactly the
// locks kept for lock_hold or longer.
func TestLockHoldExpiry(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { shared(c); c.RolloutsFile = ""; c.CombinedFile = "" })
	e.cfg.LockHold = time.Hour // past what Validate allows: the timer stays out of the test
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(1, 1, 3)))
	var first time.Time
	require.True(t, e.commits.whenIdle(func() { _, first = e.store.KeptLocks() }))
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(2, 2, 3))) // 0-1 is locked later
	require.Equal(t, 2, keptLocks(t, e))
	a := openAsOther(t, filepath.Join(e.cfg.CaptureDir, "0-0.spans.jsonl"))
	b := openAsOther(t, filepath.Join(e.cfg.CaptureDir, "0-1.spans.jsonl"))

	require.True(t, e.commits.whenIdle(func() { e.store.ExpireKept(first.Add(time.Hour - 1)) }))
	assert.ErrorIs(t, tryLock(a), unix.EWOULDBLOCK, "kept for less than lock_hold")
	require.True(t, e.commits.whenIdle(func() { e.store.ExpireKept(first.Add(time.Hour)) }))
	assert.NoError(t, tryLock(a), "kept for lock_hold")
	assert.ErrorIs(t, tryLock(b), unix.EWOULDBLOCK, "locked after the first")
	assert.Equal(t, 1, keptLocks(t, e))
}

// TestLockHoldNeverWaitsWhileKeeping: a push that must wait for a lock held
// elsewhere first gives back every lock it keeps. Two collectors that each
// keep a file the other waits for would otherwise wait for each other
// forever; here the test plays the other collector, which waits for the
// exporter's kept lock before it lets go of its own.
//
// Pushes write every file with combined_file "" only; with the combined
// file the flusher writes the rollout files, keeping no lock while it waits
// (TestFlusherWaitsHoldingNothing).
func TestLockHoldNeverWaitsWhileKeeping(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { shared(c); c.CombinedFile = "" })
	e.cfg.LockHold = time.Hour // past what Validate allows: only contention gives a lock back here
	startExporter(t, e)
	dir := e.cfg.CaptureDir
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(1, 1, 3))) // keeps 0-0, rollouts.jsonl
	other := openAsOther(t, filepath.Join(dir, "0-1.spans.jsonl"))
	require.NoError(t, tryLock(other))

	pushed := make(chan error, 1)
	go func() { pushed <- e.pushTraces(context.Background(), gymTraces(2, 2, 3)) }() // needs 0-1
	kept := openAsOther(t, filepath.Join(dir, "rollouts.jsonl"))
	lockWithin(t, kept, 10*time.Second)
	require.NoError(t, unix.Flock(int(other.Fd()), unix.LOCK_UN))
	require.NoError(t, unix.Flock(int(kept.Fd()), unix.LOCK_UN))
	select {
	case err := <-pushed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("push did not finish after the lock it waited for was given back")
	}
	assert.Len(t, readLines(t, filepath.Join(dir, "0-1.spans.jsonl")), 3)
}

// TestFlusherWaitsHoldingNothing: with the combined file, the flusher waits
// for a rollout file's lock another collector holds without keeping any
// lock, and pushes go on meanwhile (they write only the combined file, whose
// kept lock the other collector gets within lock_hold).
func TestFlusherWaitsHoldingNothing(t *testing.T) {
	e, _ := newTestExporter(t, func(c *Config) { shared(c); c.FlushInterval = time.Hour; c.LockHold = 20 * time.Millisecond })
	startExporter(t, e)
	dir := e.cfg.CaptureDir
	require.NoError(t, e.pushTraces(context.Background(), gymTraces(1, 2, 3)))
	writePendingNow(t, e)
	other := openAsOther(t, filepath.Join(dir, "0-1.spans.jsonl"))
	require.NoError(t, tryLock(other))

	require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(2, 2, 3))))
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		writePendingNow(t, e) // waits for 0-1
	}()
	// Meanwhile: the other collector can take every other file's lock, and
	// pushes are written.
	require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(3, 2, 3))))
	for _, n := range []string{"0-0.spans.jsonl", "rollouts.jsonl", "spans.jsonl"} {
		f := openAsOther(t, filepath.Join(dir, n))
		lockWithin(t, f, 10*time.Second)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_UN))
	}
	select {
	case <-flushed:
		t.Fatal("the flush did not wait for the lock held elsewhere")
	default:
	}
	require.NoError(t, unix.Flock(int(other.Fd()), unix.LOCK_UN))
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("the flush did not finish once the lock was given back")
	}
	writePendingNow(t, e) // the third push's lines, if they came after that flush took the others
	assert.Len(t, readLines(t, filepath.Join(dir, "0-1.spans.jsonl")), 9, "three pushes of 3 spans")
}
