// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// backupsOf lists spans.jsonl's rotated backups, oldest first.
func backupsOf(t testing.TB, dir string) []string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if capturedir.IsBackupName("spans.jsonl", e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestCombinedFileRotation(t *testing.T) {
	for _, keep := range []int{0, 2, 100} {
		t.Run(strconv.Itoa(keep), func(t *testing.T) {
			e, tel := newTestExporter(t, func(c *Config) {
				c.Rotation.MaxMegabytes = 1
				c.Rotation.MaxBackups = keep
			})
			startExporter(t, e)
			const batches = 12
			for i := 0; i < batches; i++ {
				require.NoError(t, e.pushTraces(context.Background(), gymTraces(uint64(i+1), 40, 10))) // ~0.3 MiB each
			}
			writePendingNow(t, e) // the rollout files, read below
			e.mu.Lock()
			e.store.WaitPruned() // pruning runs beside the writer (capturedir/prune.go)
			e.mu.Unlock()
			dir := e.cfg.CaptureDir
			backups := backupsOf(t, dir)
			rotations := sum(metricByAttr(t, tel, metricRotations, ""))
			assert.Positive(t, rotations)
			assert.Len(t, backups, min(keep, int(rotations)))
			seen := map[string]int{}
			for _, f := range append(backups, "spans.jsonl") {
				fi, err := os.Stat(filepath.Join(dir, f))
				require.NoError(t, err)
				assert.LessOrEqual(t, fi.Size(), int64(1<<20), f)
				for id, n := range spanIDsIn(t, filepath.Join(dir, f)) {
					seen[id] += n
				}
			}
			for _, n := range seen {
				assert.Equal(t, 1, n)
			}
			if keep == 100 {
				assert.Len(t, seen, batches*400, "with enough backups every line is kept")
			}
			// Per-rollout files are never rotated.
			assert.Len(t, readLines(t, filepath.Join(dir, "0-0.spans.jsonl")), batches*10)
		})
	}
}

// countFDsInside counts this process's descriptors that resolve inside dir
// (the dir itself included).
func countFDsInside(t testing.TB, dir string) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself used, already closed
		}
		if target == dir || strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// TestOpenFilesBounded writes 10,000 rollouts with max_open_files 64 and a
// 1 ms flush interval (so evicted dirty files are reopened for fsync
// concurrently, or synced with syncfs) and checks at every write that at
// most 64 descriptors resolve inside the capture dir; afterwards every line
// is present.
func TestOpenFilesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 files")
	}
	for _, tc := range []struct {
		name        string
		syncfsAbove int
	}{{"fsync per file", math.MaxInt}, {"syncfs", 0}} { // 0: the store's threshold
		t.Run(tc.name, func(t *testing.T) { testOpenFilesBounded(t, tc.syncfsAbove) })
	}
}

func testOpenFilesBounded(t *testing.T, syncfsAbove int) {
	const rollouts, perBatch = 10_000, 500
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var mu sync.Mutex
	peak := 0
	e, tel := newTestExporter(t, func(c *Config) {
		c.CaptureDir = dir
		c.MaxOpenFiles = 64
		c.FlushInterval = 1e6 // 1ms
	})
	var store *capturedir.Store // set once started (shutdown clears e.store while the flusher writes)
	e.write = func(name string, fd int, p [][]byte) (int, error) {
		// The store opens and closes descriptors only while it is not
		// steady: inside Steady the count is consistent.
		mu.Lock()
		n := 0
		store.Steady(func() { n = countFDsInside(t, dir) })
		peak = max(peak, n)
		mu.Unlock()
		return capturedir.Writev(name, fd, p)
	}
	e.syncfsAbove = syncfsAbove
	startExporter(t, e)
	store = e.store
	for b := 0; b < rollouts/perBatch; b++ {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for r := b * perBatch; r < (b+1)*perBatch; r++ {
			for k := 0; k < 2; k++ { // two passes: each file is written twice per batch... once, in order
				s := spans.AppendEmpty()
				s.SetName("span")
				s.SetTraceID([16]byte{1, byte(r >> 16), byte(r >> 8), byte(r)})
				s.SetSpanID([8]byte{byte(k + 1), byte(r >> 16), byte(r >> 8), byte(r)})
				if k == 1 {
					s.SetParentSpanID([8]byte{1, byte(r >> 16), byte(r >> 8), byte(r)})
				}
				s.Attributes().PutStr(gymconv.RolloutAttribute, fmt.Sprintf("r%05d", r))
			}
		}
		require.NoError(t, e.pushTraces(context.Background(), td))
		// Write the first rollouts again, after they were evicted.
		// (Another run each time: other trace ids, so other spans.)
		require.NoError(t, e.pushTraces(context.Background(), spansWithRollouts(fmt.Sprint("again-", b), []string{fmt.Sprintf("r%05d", b)})))
	}
	require.NoError(t, e.shutdown(context.Background()))
	assert.LessOrEqual(t, peak, 64)
	assert.Greater(t, peak, 32, "the cache was used")
	for _, r := range []int{0, 1, 7, 4999, 9999} {
		want := 2
		if r < rollouts/perBatch {
			want = 4
		}
		assert.Len(t, readLines(t, filepath.Join(dir, fmt.Sprintf("r%05d.spans.jsonl", r))), want, r)
	}
	total := 0
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, en := range ents {
		if strings.HasSuffix(en.Name(), ".spans.jsonl") {
			total += len(readLines(t, filepath.Join(dir, en.Name())))
		}
	}
	assert.Equal(t, 2*rollouts+2*rollouts/perBatch, total)
	assert.Len(t, readLines(t, filepath.Join(dir, "spans.jsonl")), 2*rollouts+2*rollouts/perBatch)
	assert.Len(t, readLines(t, filepath.Join(dir, "rollouts.jsonl")), rollouts+rollouts/perBatch)
	assert.Equal(t, int64(0), sum(metricByAttr(t, tel, metricOpenFiles, "")), "every descriptor closed")
	assert.Zero(t, sum(metricByAttr(t, tel, metricFsyncErrors, "")))
}

// The multi-process test re-executes this test binary: each child runs
// TestHelperAppender, which appends to a shared capture dir.
const (
	envHelperDir = "GYMSPANS_TEST_APPEND_DIR"
	envHelperID  = "GYMSPANS_TEST_APPEND_ID"
)

const appendBatches, appendRollouts, appendSpans = 60, 5, 8

func TestHelperAppender(t *testing.T) {
	dir := os.Getenv(envHelperDir)
	if dir == "" {
		t.Skip("runs as a child of TestTwoProcessesAppend")
	}
	id, err := strconv.Atoi(os.Getenv(envHelperID))
	require.NoError(t, err)
	e, _ := newTestExporter(t, func(c *Config) {
		shared(c)
		c.CaptureDir = dir
		c.Rotation.MaxMegabytes = 1
		c.Rotation.MaxBackups = 1000
	})
	startExporter(t, e)
	for b := 0; b < appendBatches; b++ {
		require.NoError(t, e.pushTraces(context.Background(), gymTraces(uint64(id*1000+b+1), appendRollouts, appendSpans)))
	}
}

// TestTwoProcessesAppend runs two processes appending the same rollouts'
// files and the rotating combined file at once: no line is lost, torn or
// interleaved.
func TestTwoProcessesAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := 1; i <= 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppender$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelperDir+"="+dir, envHelperID+"="+strconv.Itoa(i))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), outs[i].String())
	}
	want := map[string]int{}
	for p := 1; p <= 2; p++ {
		for b := 0; b < appendBatches; b++ {
			for id := range countSpans(gymTraces(uint64(p*1000+b+1), appendRollouts, appendSpans)) {
				want[id] = 1
			}
		}
	}
	got := map[string]int{}
	for _, f := range append(backupsOf(t, dir), "spans.jsonl") {
		for id, n := range spanIDsIn(t, filepath.Join(dir, f)) { // parses every line
			got[id] += n
		}
	}
	assert.Equal(t, want, got, "combined file and its backups")
	perRollout := map[string]int{}
	for r := 0; r < appendRollouts; r++ {
		f := fmt.Sprintf("%d-%d.spans.jsonl", r/4, r%4)
		for id, n := range spanIDsIn(t, filepath.Join(dir, f)) {
			perRollout[id] += n
		}
	}
	assert.Equal(t, want, perRollout, "per-rollout files")
	assert.NotEmpty(t, backupsOf(t, dir), "the combined file rotated while shared")
}

// TestManyLinesPerFile interleaves two rollouts so each file gets more
// separate lines than one writev takes; a failure in the second call cuts
// the first call's bytes too.
func TestManyLinesPerFile(t *testing.T) {
	const n = 2*capturedir.IovMax + 100
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := 0; i < 2*n; i++ {
		s := spans.AppendEmpty()
		s.SetTraceID([16]byte{byte(i % 2)})
		s.SetSpanID([8]byte{byte(i >> 16), byte(i >> 8), byte(i), 1})
		s.SetParentSpanID([8]byte{9})
		s.Attributes().PutStr(gymconv.RolloutAttribute, fmt.Sprintf("r%d", i%2))
	}
	calls := 0
	e, _ := newTestExporter(t, func(c *Config) { c.CombinedFile = "" })
	e.write = func(name string, fd int, iovs [][]byte) (int, error) {
		require.LessOrEqual(t, len(iovs), capturedir.IovMax)
		n := 0
		for _, b := range iovs {
			n += len(b)
		}
		require.LessOrEqual(t, n, capturedir.MaxWriteBytes)
		if name == "r1.spans.jsonl" {
			calls++
			if calls == 2 {
				return 0, fmt.Errorf("injected: %w", os.ErrDeadlineExceeded)
			}
		}
		return capturedir.Writev(name, fd, iovs)
	}
	startExporter(t, e)
	require.Error(t, e.pushTraces(context.Background(), td))
	assert.Len(t, readLines(t, filepath.Join(e.cfg.CaptureDir, "r0.spans.jsonl")), n)
	data, err := os.ReadFile(filepath.Join(e.cfg.CaptureDir, "r1.spans.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, data, "the first writev's lines were cut with the failed second")
}

// TestRemovedFileIsRecreated (shared_capture_dir on): a user removes a rollout's file while the
// collector holds it open; the next batch goes to a new file by that name,
// not into the unlinked one.
func TestRemovedFileIsRecreated(t *testing.T) {
	e, _ := newTestExporter(t, shared)
	startExporter(t, e)
	// No root: the rollout is not finished, its file stays open.
	require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(1, 1, 3))))
	flushFiles(t, e)
	path := filepath.Join(e.cfg.CaptureDir, "0-0.spans.jsonl")
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Remove(filepath.Join(e.cfg.CaptureDir, "spans.jsonl")))
	require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(2, 1, 3))))
	flushFiles(t, e)
	assert.Len(t, readLines(t, path), 3)
	assert.Len(t, readLines(t, filepath.Join(e.cfg.CaptureDir, "spans.jsonl")), 3)
}

// TestOpenFilesCountsTheIndex: the open_files gauge counts every
// descriptor the exporter holds inside the capture dir but the dir's own,
// the journal index's included.
func TestOpenFilesCountsTheIndex(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	e, tel := newTestExporter(t, func(c *Config) { c.CaptureDir = dir })
	startExporter(t, e)
	require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(1, 2, 3))))
	writePendingNow(t, e)
	inside := 0
	e.store.Steady(func() { inside = countFDsInside(t, dir) })
	assert.Equal(t, int64(inside-1), sum(metricByAttr(t, tel, metricOpenFiles, "")))
	require.NoError(t, e.shutdown(context.Background()))
	assert.Zero(t, sum(metricByAttr(t, tel, metricOpenFiles, "")))
}
