// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

// Crash recovery in one process: crash stops an exporter as a kill -9 would
// (descriptors closed, so its locks are given back; nothing flushed, its
// journal index left), and the next exporter on the capture dir completes
// the files at its start. Locks belong to open file descriptions, so two
// exporters in one process contend as two collectors would.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
)

// pauseFlusher keeps e's flusher from writing (a root's wake-up would
// otherwise write the rollout files before the crash the test stages).
func pauseFlusher(t *testing.T, e *spansExporter) {
	t.Helper()
	e.mu.Lock()
	f := e.flusher
	e.mu.Unlock()
	f.mu.Lock()
	paused[f] = true
}

var paused = map[*flusher]bool{} // the test goroutine's

// crash stops e as a kill -9 would. No push may be in flight but one stuck
// forever in the write seam.
func crash(t *testing.T, e *spansExporter) {
	t.Helper()
	e.mu.Lock()
	store, f := e.store, e.flusher
	e.store, e.flusher = nil, nil
	e.mu.Unlock()
	require.NotNil(t, store, "started")
	close(f.stop)
	if !paused[f] {
		f.mu.Lock() // after a flush in progress; never given back: no flush after the crash
	}
	store.Abandon() // every descriptor closed, which gives its lock back
	require.NoError(t, e.journal.Close(false))
}

// recoveryConfig is the tests' config on dir, with the service map and no
// flush tick of its own.
func recoveryConfig(dir string, mutate func(*Config)) func(*Config) {
	return func(c *Config) {
		c.CaptureDir = dir
		c.ServiceMap.Enabled = true
		c.FlushInterval = time.Hour
		if mutate != nil {
			mutate(c)
		}
	}
}

// merged is the expected content of every file of several streams.
func merged(tds ...ptrace.Traces) map[string]map[string]int {
	want := map[string]map[string]int{}
	for _, td := range tds {
		for f, ids := range expectedFiles(td) {
			if want[f] == nil {
				want[f] = map[string]int{}
			}
			for id := range ids {
				want[f][id]++
			}
		}
	}
	return want
}

// serviceMapCalls reads the calls per edge of dir's service_map.json.
func serviceMapCalls(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	if os.IsNotExist(err) {
		return map[string]uint64{}
	}
	require.NoError(t, err)
	edges, err := servicemap.ReadEdges(data)
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, e := range edges {
		out[e.Run+" "+e.Client+" -> "+e.Server] += e.Calls
	}
	return out
}

// withCalls adds to td three calls of run-<seed> for the service map
// (gymTraces' CLIENT spans carry no peer.service).
func withCalls(td ptrace.Traces, seed int) ptrace.Traces {
	clientCalls(td, fmt.Sprint("run-", seed), "nemo-gym/simple_agent", "nemo-gym/policy_model", 3, 1, 100*time.Millisecond)
	return td
}

// TestRecoveryAfterCrash: pushes returned, then a kill -9 before the flush:
// the combined file has every span, the rollout files and rollouts.jsonl
// nothing yet; the next start completes them, and the service map counts
// each call once, whether the crash came before any service-map flush or
// after one. A retry of the last batch after the restart is dropped.
func TestRecoveryAfterCrash(t *testing.T) {
	for _, tc := range []struct{ format, mode string }{
		{formatConsole, combinedAll}, {formatOTLPJSON, combinedAll}, {formatConsole, combinedRest}, {formatOTLPJSON, combinedRest},
	} {
		format, mode := tc.format, tc.mode
		t.Run(format+"/"+mode, func(t *testing.T) {
			dir := t.TempDir()
			mut := recoveryConfig(dir, func(c *Config) { c.Format, c.CombinedSpans = format, mode })
			a, tel := newTestExporter(t, mut)
			startExporter(t, a)
			first, second := withCalls(gymTraces(1, 3, 4), 1), withCalls(gymTraces(2, 3, 4), 2)
			require.NoError(t, a.pushTraces(context.Background(), first))
			flushFiles(t, a) // first is in every file and in the service map
			pauseFlusher(t, a)
			require.NoError(t, a.pushTraces(context.Background(), second))
			crash(t, a)
			want := map[string]uint64{"run-1 nemo-gym/simple_agent -> nemo-gym/policy_model": 3}
			assert.Equal(t, want, serviceMapCalls(t, dir), "before the restart: the calls flushed")

			b, tel2 := newTestExporter(t, mut)
			startExporter(t, b)
			assert.Positive(t, sum(metricByAttr(t, tel2, metricRecovered, "file")), "lines completed")
			// The sender retries the batch whose answer it never got.
			require.NoError(t, b.pushTraces(context.Background(), second))
			assert.Equal(t, int64(second.SpanCount()), sum(metricByAttr(t, tel2, metricDuplicates, "")), "the retry is dropped")
			require.NoError(t, b.shutdown(context.Background()))
			want["run-2 nemo-gym/simple_agent -> nemo-gym/policy_model"] = 3
			assert.Equal(t, want, serviceMapCalls(t, dir), "every call once")
			if format == formatConsole {
				assertExactlyOnce(t, dir, forMode(mode, merged(first, second)))
			} else {
				for f, ids := range forMode(mode, merged(first, second)) {
					if f == "rollouts.jsonl" {
						assert.Equal(t, ids, spanIDsIn(t, filepath.Join(dir, f)), f)
						continue
					}
					if _, err := os.Stat(filepath.Join(dir, f)); len(ids) == 0 && errors.Is(err, os.ErrNotExist) {
						continue // rest: no span in no rollout, no combined file
					}
					assert.Equal(t, ids, otlpSpanIDsIn(t, filepath.Join(dir, f)), f)
					if mode == combinedRest {
						continue
					}
					// Completed lines keep the resource and scope the span came in.
					combined := otlpPlacesIn(t, filepath.Join(dir, "spans.jsonl"))
					for id, place := range otlpPlacesIn(t, filepath.Join(dir, f)) {
						assert.Equal(t, combined[id], place, "%s: span %s", f, id)
					}
				}
			}
			assertNoIndexLeft(t, dir)
			_ = tel
		})
	}
}

func assertNoIndexLeft(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, journal.Dir))
	require.NoError(t, err)
	assert.Empty(t, ents, "no journal index is left")
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	if err == nil {
		var doc struct {
			Writers []json.RawMessage `json:"writers"`
		}
		require.NoError(t, json.Unmarshal(data, &doc))
		assert.Empty(t, doc.Writers, "no writer position is left in service_map.json")
	}
}

// TestRecoveryAfterFlushBeforeDone: the crash came after a flush wrote the
// rollout files, before its done record: completing adds nothing twice.
func TestRecoveryAfterFlushBeforeDone(t *testing.T) {
	for _, mode := range []string{combinedAll, combinedRest} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			mut := recoveryConfig(dir, withMode(mode, nil))
			a, _ := newTestExporter(t, mut)
			startExporter(t, a)
			td := gymTraces(3, 4, 5)
			require.NoError(t, a.pushTraces(context.Background(), td))
			writePendingNow(t, a) // in the files; no done record
			crash(t, a)
			assertExactlyOnce(t, dir, forMode(mode, expectedFiles(td)))

			b, tel := newTestExporter(t, mut)
			startExporter(t, b)
			require.NoError(t, b.shutdown(context.Background()))
			assertExactlyOnce(t, dir, forMode(mode, expectedFiles(td)))
			assert.Zero(t, sum(metricByAttr(t, tel, metricRecovered, "file")), "nothing was missing")
		})
	}
}

// TestRecoveryOfTornJournal: the collector died in the middle of writing a
// group to the combined file (the seam writes half of it and never
// returns). The whole lines of that write are its own and are completed;
// the torn line is cut. The push never returned, so the sender sends the
// batch again: the spans already in the files are dropped, the others
// written, and every span is in every file once.
func TestRecoveryOfTornJournal(t *testing.T) {
	dir := t.TempDir()
	mut := recoveryConfig(dir, nil)
	a, _ := newTestExporter(t, mut)
	stuck := make(chan struct{})
	var torn bool
	a.write = func(name string, fd int, iovs [][]byte) (int, error) {
		if name == "spans.jsonl" && torn {
			var p []byte
			for _, b := range iovs {
				p = append(p, b...)
			}
			_, _ = unix.Write(fd, p[:len(p)/2+7])
			<-stuck // dies here
		}
		return capturedir.Writev(name, fd, iovs)
	}
	startExporter(t, a)
	pauseFlusher(t, a)
	before := gymTraces(4, 2, 3)
	require.NoError(t, a.pushTraces(context.Background(), before))
	fi, err := os.Stat(filepath.Join(dir, "spans.jsonl"))
	require.NoError(t, err)
	torn = true
	td := gymTraces(5, 4, 6)
	go func() { _ = a.pushTraces(context.Background(), td) }()
	waitForFileSize(t, filepath.Join(dir, "spans.jsonl"), func(n int64) bool { return n > fi.Size() })
	crash(t, a)

	b, tel := newTestExporter(t, mut)
	startExporter(t, b)
	assert.Positive(t, sum(metricByAttr(t, tel, metricRecovered, "file")), "the whole lines of the torn write are completed")
	require.NoError(t, b.pushTraces(context.Background(), td)) // the sender's retry
	assert.Positive(t, sum(metricByAttr(t, tel, metricDuplicates, "")), "the spans the torn write holds are dropped")
	require.NoError(t, b.shutdown(context.Background()))
	assertExactlyOnce(t, dir, merged(before, td))
	assert.Equal(t, int64(1), sum(metricByAttr(t, tel, metricTornTails, "")), "the torn line was cut")
}

// waitForFileSize polls a file's size until ok (the file another goroutine
// writes; the condition is what is waited for).
func waitForFileSize(t *testing.T, path string, ok func(int64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := os.Stat(path); err == nil && ok(fi.Size()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the size", path)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRecoveryAcrossRotation: the combined file rotated between the last
// flush and the crash: the lines after the done record are in a backup,
// found by inode, and completed.
func TestRecoveryAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	mut := recoveryConfig(dir, func(c *Config) { c.Rotation.MaxMegabytes = 1; c.Rotation.MaxBackups = 5 })
	a, _ := newTestExporter(t, mut)
	startExporter(t, a)
	var sent []ptrace.Traces
	for i := range 6 { // ~0.3 MiB each: two rotations
		td := gymTraces(uint64(10+i), 40, 10)
		sent = append(sent, td)
		require.NoError(t, a.pushTraces(context.Background(), td))
		if i == 0 {
			flushFiles(t, a)
		}
	}
	require.GreaterOrEqual(t, len(backupsOf(t, dir)), 2)
	crash(t, a)

	b, _ := newTestExporter(t, mut)
	startExporter(t, b)
	require.NoError(t, b.shutdown(context.Background()))
	want := merged(sent...)
	combined := want["spans.jsonl"]
	delete(want, "spans.jsonl")
	assertExactlyOnce(t, dir, want)
	assert.Equal(t, combined, combinedIDs(t, dir))
}

// TestRecoveryWithSharedDir: two exporters write the same rollouts into one
// capture dir; one crashes before its flush, the other goes on. The next
// start completes only the dead one's lines; the living one's are its own
// to write.
func TestRecoveryWithSharedDir(t *testing.T) {
	for _, mode := range []string{combinedAll, combinedRest} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			mut := recoveryConfig(dir, withMode(mode, shared))
			a, _ := newTestExporter(t, mut)
			startExporter(t, a)
			b, _ := newTestExporter(t, mut)
			startExporter(t, b)
			var sent []ptrace.Traces
			for i := range 4 {
				ta, tb := gymTraces(uint64(20+i), 3, 4), gymTraces(uint64(30+i), 3, 4) // the same rollouts 0-0..0-2
				sent = append(sent, ta, tb)
				require.NoError(t, a.pushTraces(context.Background(), ta))
				require.NoError(t, b.pushTraces(context.Background(), tb))
			}
			crash(t, a)
			c, _ := newTestExporter(t, mut)
			startExporter(t, c)
			for i := range 2 {
				tb := gymTraces(uint64(40+i), 3, 4)
				sent = append(sent, tb)
				require.NoError(t, b.pushTraces(context.Background(), tb))
			}
			require.NoError(t, c.shutdown(context.Background()))
			require.NoError(t, b.shutdown(context.Background()))
			assertExactlyOnce(t, dir, forMode(mode, merged(sent...)))
			assertNoIndexLeft(t, dir)
		})
	}
}

// TestRecoveryTwice: a crash during the run that follows a recovery: the
// keys the first recovery read are still known (a retry after the second
// restart is dropped), and every file is complete once.
func TestRecoveryTwice(t *testing.T) {
	for _, mode := range []string{combinedAll, combinedRest} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			mut := recoveryConfig(dir, withMode(mode, nil))
			a, _ := newTestExporter(t, mut)
			startExporter(t, a)
			first := gymTraces(50, 3, 4)
			require.NoError(t, a.pushTraces(context.Background(), first))
			crash(t, a)
			b, _ := newTestExporter(t, mut)
			startExporter(t, b)
			second := gymTraces(51, 3, 4)
			require.NoError(t, b.pushTraces(context.Background(), second))
			crash(t, b)
			c, tel := newTestExporter(t, mut)
			startExporter(t, c)
			require.NoError(t, c.pushTraces(context.Background(), first)) // a late retry of the first batch
			assert.Equal(t, int64(first.SpanCount()), sum(metricByAttr(t, tel, metricDuplicates, "")))
			require.NoError(t, c.shutdown(context.Background()))
			assertExactlyOnce(t, dir, forMode(mode, merged(first, second)))
		})
	}
}

// TestCorruptIndexIsCompletedUpToTheDamage: a journal index whose last
// record is cut short (the crash came in its write) or whose bytes were
// damaged is completed up to there; the exporter starts.
func TestCorruptIndexIsCompletedUpToTheDamage(t *testing.T) {
	dir := t.TempDir()
	mut := recoveryConfig(dir, nil)
	a, _ := newTestExporter(t, mut)
	startExporter(t, a)
	first, second := gymTraces(60, 2, 3), gymTraces(61, 2, 3)
	require.NoError(t, a.pushTraces(context.Background(), first))
	require.NoError(t, a.pushTraces(context.Background(), second))
	crash(t, a)
	segs, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(segs[0], data[:len(data)-5], 0o640)) // the second extent torn

	b, _ := newTestExporter(t, mut)
	startExporter(t, b)
	require.NoError(t, b.shutdown(context.Background()))
	for f, ids := range expectedFiles(first) {
		got := spanIDsIn(t, filepath.Join(dir, f))
		for id := range ids {
			assert.Equal(t, 1, got[id], "%s: %s of the extent before the damage", f, id)
		}
	}
	assertNoIndexLeft(t, dir)
}

// TestIndexOfAnotherConfigIsLeft: a dead index written with another format
// is not completed by this exporter (its lines would not be its files'),
// and is left for one configured as it was.
func TestIndexOfAnotherConfigIsLeft(t *testing.T) {
	dir := t.TempDir()
	a, _ := newTestExporter(t, recoveryConfig(dir, func(c *Config) { c.Format = formatOTLPJSON }))
	startExporter(t, a)
	pauseFlusher(t, a)
	require.NoError(t, a.pushTraces(context.Background(), gymTraces(70, 2, 3)))
	crash(t, a)
	b, tel := newTestExporter(t, recoveryConfig(dir, nil))
	startExporter(t, b)
	require.NoError(t, b.shutdown(context.Background()))
	assert.Zero(t, sum(metricByAttr(t, tel, metricRecovered, "file")))
	segs, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
	require.NoError(t, err)
	assert.Len(t, segs, 1, "the other config's index is left")
	c, tel3 := newTestExporter(t, recoveryConfig(dir, func(c *Config) { c.Format = formatOTLPJSON }))
	startExporter(t, c)
	require.NoError(t, c.shutdown(context.Background()))
	assert.Positive(t, sum(metricByAttr(t, tel3, metricRecovered, "file")))
	assertNoIndexLeft(t, dir)
}

// TestCleanShutdownLeavesNoIndex: after a shutdown that wrote everything,
// the journal dir is empty and the next start completes nothing.
func TestCleanShutdownLeavesNoIndex(t *testing.T) {
	dir := t.TempDir()
	a, _ := newTestExporter(t, recoveryConfig(dir, nil))
	startExporter(t, a)
	require.NoError(t, a.pushTraces(context.Background(), withCalls(gymTraces(80, 2, 3), 80)))
	require.NoError(t, a.shutdown(context.Background()))
	assertNoIndexLeft(t, dir)
}

// With deduplication off no extent holds a key, and the index still ends
// its segments (by size) and removes the done ones: it stays bounded over a
// long run instead of growing by every append.
func TestIndexStaysBoundedWithoutDedup(t *testing.T) {
	for _, mode := range []string{combinedAll, combinedRest} {
		t.Run(mode, func(t *testing.T) {
			defer func(old int64) { maxSegmentBytes = old }(maxSegmentBytes)
			maxSegmentBytes = 4 << 10
			dir := t.TempDir()
			e, _ := newTestExporter(t, recoveryConfig(dir, withMode(mode, func(c *Config) { c.DedupWindowSpans = 0 })))
			startExporter(t, e)
			var peak int64
			for i := range 200 {
				require.NoError(t, e.pushTraces(context.Background(), gymTraces(uint64(i+1), 2, 5)))
				flushFiles(t, e)
				segs, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
				require.NoError(t, err)
				data, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.spans")) // combined_spans rest
				require.NoError(t, err)
				segs = append(segs, data...)
				var size int64
				for _, s := range segs {
					fi, err := os.Stat(s)
					require.NoError(t, err)
					size += fi.Size()
				}
				peak = max(peak, size)
			}
			assert.Less(t, peak, 4*maxSegmentBytes, "the index's segments (and data files) at their largest (200 pushes, %d B segments)", maxSegmentBytes)
			require.NoError(t, e.shutdown(context.Background()))
		})
	}
}

// TestRecoveryWithinMaxOpenFiles: recovery reads the extents from a dozen
// rotated backups of the combined file with one descriptor at a time,
// within max_open_files (it held every backup open while it completed the
// files), and completes every file. The dead index's lock, held for the
// recovery, is the one descriptor beside the bound.
func TestRecoveryWithinMaxOpenFiles(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	const maxOpen = 8
	mut := recoveryConfig(dir, func(c *Config) {
		c.Rotation.MaxMegabytes = 1
		c.Rotation.MaxBackups = 100
		c.MaxOpenFiles = maxOpen
		c.ServiceMap.Enabled = false
	})
	a, _ := newTestExporter(t, mut)
	startExporter(t, a)
	var sent []ptrace.Traces
	for i := range 40 { // ~0.3 MiB each: a dozen rotations
		td := gymTraces(uint64(100+i), 40, 10)
		sent = append(sent, td)
		require.NoError(t, a.pushTraces(context.Background(), td))
	}
	require.GreaterOrEqual(t, len(backupsOf(t, dir)), maxOpen)
	crash(t, a)

	b, _ := newTestExporter(t, mut)
	peak := 0
	b.write = func(name string, fd int, p [][]byte) (int, error) {
		peak = max(peak, countFDsInside(t, dir))
		return capturedir.Writev(name, fd, p)
	}
	startExporter(t, b)
	require.NoError(t, b.shutdown(context.Background()))
	assert.Positive(t, peak, "recovery wrote")
	assert.LessOrEqual(t, peak, maxOpen+1)
	want := merged(sent...)
	combined := want["spans.jsonl"]
	delete(want, "spans.jsonl")
	assertExactlyOnce(t, dir, want)
	assert.Equal(t, combined, combinedIDs(t, dir))
}

// withMode sets combined_spans, then mutate.
func withMode(mode string, mutate func(*Config)) func(*Config) {
	return func(c *Config) {
		c.CombinedSpans = mode
		if mutate != nil {
			mutate(c)
		}
	}
}

// forMode is want with combined_spans mode: with rest, the combined file
// holds only the spans that are in no rollout file.
func forMode(mode string, want map[string]map[string]int) map[string]map[string]int {
	if mode != combinedRest {
		return want
	}
	rest := map[string]int{}
	for id, n := range want["spans.jsonl"] {
		inRollout := false
		for f, ids := range want {
			if f != "spans.jsonl" && f != "rollouts.jsonl" && ids[id] > 0 {
				inRollout = true
			}
		}
		if !inRollout {
			rest[id] = n
		}
	}
	want["spans.jsonl"] = rest
	return want
}
