// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// restConfig is the recovery tests' config with combined_spans rest.
func restConfig(dir string, mutate func(*Config)) func(*Config) {
	return recoveryConfig(dir, withMode(combinedRest, mutate))
}

// withStray takes the rollout id off every n-th span of td (they are then
// in no rollout) and returns their ids.
func withStray(td ptrace.Traces, n int) (ptrace.Traces, map[string]int) {
	stray := map[string]int{}
	k := 0
	gymtest.EachSpan(td, func(_ pcommon.Resource, span ptrace.Span) {
		if k%n == n-1 {
			span.Attributes().Remove(gymconv.RolloutAttribute)
			stray[span.SpanID().String()] = 1
		}
		k++
	})
	return td, stray
}

// TestRestWritesEachSpanOnce: with combined_spans rest a rollout's span is
// in its rollout file and not in the combined file; a span in no rollout
// and one whose rollout id may not become a file name are in the combined
// file only. A clean shutdown leaves no journal.
func TestRestWritesEachSpanOnce(t *testing.T) {
	dir := t.TempDir()
	e, _ := newTestExporter(t, restConfig(dir, nil))
	startExporter(t, e)
	td, stray := withStray(gymTraces(7, 4, 5), 6)
	unsafe := ""
	gymtest.EachSpan(td, func(_ pcommon.Resource, span ptrace.Span) {
		if id, _ := span.Attributes().Get(gymconv.RolloutAttribute); unsafe == "" && id.Str() == "0-3" {
			span.Attributes().PutStr(gymconv.RolloutAttribute, "../0-3")
			unsafe = span.SpanID().String()
			stray[unsafe] = 1
		}
	})
	require.NoError(t, e.pushTraces(context.Background(), td))
	require.NoError(t, e.shutdown(context.Background()))
	assert.Equal(t, stray, spanIDsIn(t, filepath.Join(dir, "spans.jsonl")), "the combined file holds the spans in no rollout file")
	all := 0
	for _, f := range walkFiles(t, dir) {
		if strings.HasSuffix(f, ".spans.jsonl") {
			for id := range spanIDsIn(t, filepath.Join(dir, f)) {
				assert.NotContains(t, stray, id, f)
				all++
			}
		}
	}
	assert.Equal(t, td.SpanCount(), all+len(stray), "every span once in human form")
	assertNoIndexLeft(t, dir)
}

// TestRestCombinedFailureCancels: the combined file's append fails after
// the group's journal record was written: the push fails whole, its record
// is cancelled, and after a crash the next start completes nothing of it;
// the sender's retry writes it once.
func TestRestCombinedFailureCancels(t *testing.T) {
	dir := t.TempDir()
	mut := restConfig(dir, nil)
	a, _ := newTestExporter(t, mut)
	full := true
	a.write = func(name string, fd int, iovs [][]byte) (int, error) {
		if name == "spans.jsonl" && full {
			return 0, unix.ENOSPC
		}
		return capturedir.Writev(name, fd, iovs)
	}
	startExporter(t, a)
	pauseFlusher(t, a)
	td, stray := withStray(gymTraces(8, 3, 4), 5)
	err := a.pushTraces(context.Background(), td)
	require.Error(t, err)
	assert.True(t, errors.Is(err, unix.ENOSPC), "%v", err)
	crash(t, a)

	b, tel := newTestExporter(t, mut)
	startExporter(t, b)
	assert.Zero(t, sum(metricByAttr(t, tel, metricRecovered, "file")), "a cancelled group is not completed")
	require.NoError(t, b.pushTraces(context.Background(), td)) // the retry
	require.NoError(t, b.shutdown(context.Background()))
	assertExactlyOnce(t, dir, forMode(combinedRest, expectedFilesOf(td, stray)))
}

// TestRestDamagedDataFile: a journal whose data file was cut (a power loss)
// is completed as far as its blobs are whole; the start does not fail.
func TestRestDamagedDataFile(t *testing.T) {
	dir := t.TempDir()
	mut := restConfig(dir, nil)
	a, _ := newTestExporter(t, mut)
	startExporter(t, a)
	pauseFlusher(t, a)
	first, second := gymTraces(9, 2, 3), gymTraces(10, 2, 3)
	require.NoError(t, a.pushTraces(context.Background(), first))
	require.NoError(t, a.pushTraces(context.Background(), second))
	crash(t, a)
	matches, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.spans"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	fi, err := os.Stat(matches[0])
	require.NoError(t, err)
	require.NoError(t, os.Truncate(matches[0], fi.Size()-10)) // the second blob is cut

	b, _ := newTestExporter(t, mut)
	startExporter(t, b)
	require.NoError(t, b.shutdown(context.Background()))
	assertExactlyOnce(t, dir, forMode(combinedRest, expectedFiles(first)))
	assertNoIndexLeft(t, dir)
}

// TestRestUnsafeFileAtFlush: a symlink planted under a rollout's file name
// before the flush: with combined_spans rest the rollout's lines go to the
// combined file instead (they are in no other human-readable file).
func TestRestUnsafeFileAtFlush(t *testing.T) {
	dir := t.TempDir()
	e, tel := newTestExporter(t, restConfig(dir, nil))
	startExporter(t, e)
	pauseFlusher(t, e)
	td := gymTraces(11, 2, 3)
	require.NoError(t, e.pushTraces(context.Background(), td))
	target := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "0-1.spans.jsonl")))
	e.mu.Lock()
	f := e.flusher
	e.mu.Unlock()
	f.writePending(allFiles)
	f.mu.Unlock()
	delete(paused, f)
	require.NoError(t, e.shutdown(context.Background()))
	want := expectedFiles(td)
	assert.Equal(t, want["0-1.spans.jsonl"], spanIDsIn(t, filepath.Join(dir, "spans.jsonl")), "the unsafe file's spans are in the combined file")
	assert.Equal(t, want["0-0.spans.jsonl"], spanIDsIn(t, filepath.Join(dir, "0-0.spans.jsonl")))
	assert.NoFileExists(t, target)
	assert.Positive(t, sum(metricByAttr(t, tel, metricRejected, "reason")))
}

// expectedFilesOf is expectedFiles for a td whose stray spans lack a
// rollout id (withStray): those are in the combined file only.
func expectedFilesOf(td ptrace.Traces, stray map[string]int) map[string]map[string]int {
	want := expectedFiles(td)
	delete(want, ".spans.jsonl")
	for id := range stray {
		delete(want["rollouts.jsonl"], id)
	}
	return want
}
