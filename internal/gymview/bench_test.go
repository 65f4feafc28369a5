// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/gymview/gymviewtest"
)

const (
	benchRollouts = 100_000
	benchSpans    = 10_000
)

// benchDirs are the synthetic capture dirs of the benchmarks, written once
// per process: on tmpfs (/dev/shm) when there is one, else in the temporary
// directory; $GYMVIEW_BENCH_DIR keeps them between runs.
var benchDirs struct {
	once      sync.Once
	run, big  string
	bigSpans  int
	err       error
	generated string // removed at the end when not kept
}

func benchDir(b *testing.B) (run, big string, bigSpans int) {
	b.Helper()
	benchDirs.once.Do(func() {
		root := os.Getenv("GYMVIEW_BENCH_DIR")
		if root == "" {
			parent := ""
			if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
				parent = "/dev/shm"
			}
			root, benchDirs.err = os.MkdirTemp(parent, "gymview-bench-")
			if benchDirs.err != nil {
				return
			}
			benchDirs.generated = root
		}
		benchDirs.run = filepath.Join(root, "run100k")
		benchDirs.big = filepath.Join(root, "rollout10k")
		if _, err := os.Stat(filepath.Join(benchDirs.run, "rollouts.jsonl")); err != nil {
			benchDirs.err = gymviewtest.WriteRun(benchDirs.run, gymviewtest.Run{ID: "bench", Rollouts: benchRollouts, FailedEvery: 7, InFlight: 8})
			if benchDirs.err != nil {
				return
			}
		}
		benchDirs.bigSpans, benchDirs.err = gymviewtest.WriteRollout(benchDirs.big, "bench", "big-0", benchSpans)
	})
	require.NoError(b, benchDirs.err)
	return benchDirs.run, benchDirs.big, benchDirs.bigSpans
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDirs.generated != "" {
		os.RemoveAll(benchDirs.generated)
	}
	os.Exit(code)
}

func firstPage(b *testing.B, h *Handler, target string) listPage {
	b.Helper()
	rec := get(b, h, target)
	require.Equal(b, http.StatusOK, rec.Code, rec.Body.String())
	var p listPage
	require.NoError(b, json.Unmarshal(rec.Body.Bytes(), &p))
	return p
}

// BenchmarkFirstPage100k lists the first page of a run of 100,000 rollouts
// (rollouts.jsonl of 100,000 lines, 200,000 rollout files in the directory):
// cold is a viewer just started (rollouts.jsonl indexed, the directory
// scanned, the run sorted, the page's 100 rows' files counted); warm is the
// same page again, the way a polling page asks for it.
func BenchmarkFirstPage100k(b *testing.B) {
	dir, _, _ := benchDir(b)
	const target = "/api/rollouts?run=bench"
	b.Run("cold", func(b *testing.B) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var h *Handler
		for i := 0; i < b.N; i++ {
			if h != nil {
				h.Close()
			}
			var err error
			h, err = New(Options{CaptureDir: dir})
			require.NoError(b, err)
			p := firstPage(b, h, target)
			if p.All != benchRollouts || len(p.Rows) != defaultPageSize {
				b.Fatalf("listed %d rollouts, %d rows", p.All, len(p.Rows))
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "heap-MiB")
		h.Close()
	})
	for name, target := range map[string]string{
		"warm":              target,
		"warm_slowest":      target + "&sort=duration",
		"warm_failed_id_q":  target + "&failed=1&q=99",
		"warm_page_500_asc": target + "&order=asc&offset=50000",
	} {
		b.Run(name, func(b *testing.B) {
			h, err := New(Options{CaptureDir: dir})
			require.NoError(b, err)
			defer h.Close()
			firstPage(b, h, target)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				firstPage(b, h, target)
			}
		})
	}
}

// BenchmarkRolloutAPI10kSpans answers /api/rollout for one rollout of 10,000
// spans and 2,000 model exchanges (the server's share of drawing it).
func BenchmarkRolloutAPI10kSpans(b *testing.B) {
	_, dir, spans := benchDir(b)
	h, err := New(Options{CaptureDir: dir})
	require.NoError(b, err)
	defer h.Close()
	var size int
	for i := 0; i < b.N; i++ {
		rec := get(b, h, "/api/rollout?run=bench&id=big-0")
		require.Equal(b, http.StatusOK, rec.Code)
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(spans), "spans")
	b.ReportMetric(float64(size)/(1<<20), "MiB/answer")
}

// TestSyntheticCaptures: the benchmarks' synthetic dirs are what they claim
// (rollouts in flight, failed rollouts, every exchange joined).
func TestSyntheticCaptures(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, gymviewtest.WriteRun(dir, gymviewtest.Run{ID: "syn", Rollouts: 20, FailedEvery: 3, InFlight: 2}))
	h := newTestHandler(t, dir, Options{})
	var p listPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/rollouts?run=syn").Body.Bytes(), &p))
	assert.Equal(t, 20, p.All)
	assert.Equal(t, 2, p.InFlight)
	assert.Equal(t, 6, p.Failed) // 0, 3, ..., 15 (18 is in flight)
	for _, r := range p.Rows {
		assert.Equal(t, 1, r.Spans)
		assert.Equal(t, 1, r.ModelCalls)
	}
	big := t.TempDir()
	spans, err := gymviewtest.WriteRollout(big, "syn", "big-0", 103)
	require.NoError(t, err)
	page, err := newTestHandler(t, big, Options{}).readRollout("big-0", "syn")
	require.NoError(t, err)
	assert.Len(t, page.Spans, spans)
	assert.Equal(t, 103, spans)
	assert.Len(t, page.Exchanges, 20)
	failed := 0
	for _, x := range page.Exchanges {
		assert.NotEmpty(t, x.SpanID, "exchange %d joined", x.N)
		if x.StatusCode != http.StatusOK {
			failed++
		}
	}
	assert.Equal(t, 2, failed)
	assert.Equal(t, 2, page.Errors)
	assert.Equal(t, 0, page.Spans[0].Depth)
	assert.Equal(t, spans-1, page.Spans[0].Descendants, "one tree")
}

// BenchmarkWatch100k is the gymview extension's watcher on a capture dir of
// 100,000 rollouts: quiet is a round when nothing changed (one every 2 s);
// rescan a round after the directory changed, its scan allowed (the watcher
// spaces them 100 times their cost apart); first a watcher's first round.
// telemetry_off is the same on 100,000 capture-only rollouts (no span):
// first stats and reads the first of them within a round's budget, quiet
// is a round once all are read, recheck the round that checks every one of
// them again (at most every 30 s, and 100 times its cost apart).
func BenchmarkWatch100k(b *testing.B) {
	dir, _, _ := benchDir(b)
	off := filepath.Join(filepath.Dir(dir), "off100k")
	if _, err := os.Stat(off); err != nil {
		require.NoError(b, gymviewtest.WriteRun(off, gymviewtest.Run{ID: "bench", Rollouts: benchRollouts, CaptureOnly: true}))
		// A past run's: every capture-only rollout qualifies at once.
		entries, err := os.ReadDir(off)
		require.NoError(b, err)
		old := time.Now().Add(-time.Hour)
		for _, e := range entries {
			require.NoError(b, os.Chtimes(filepath.Join(off, e.Name()), old, old))
		}
	}
	opts := func(d string) Options { return Options{CaptureDir: d, StalledAfter: DefaultStalledAfter} }
	for _, d := range []struct{ name, dir string }{{"spans", dir}, {"telemetry_off", off}} {
		b.Run(d.name+"/first", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				h, err := New(opts(d.dir))
				require.NoError(b, err)
				h.Watch()
				h.Close()
			}
		})
		b.Run(d.name+"/quiet", func(b *testing.B) {
			h, err := New(opts(d.dir))
			require.NoError(b, err)
			defer h.Close()
			for h.Watch(); !allRead(h); h.Watch() {
			}
			h.live.checked = time.Now() // the recheck of every capture-only rollout is its own below
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Watch()
			}
			b.ReportMetric(float64(len(h.live.captures)), "capture-only")
		})
		b.Run(d.name+"/recheck", func(b *testing.B) {
			h, err := New(opts(d.dir))
			require.NoError(b, err)
			defer h.Close()
			for h.Watch(); !allRead(h); h.Watch() {
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.live.checked = time.Time{}
				h.Watch()
			}
		})
		b.Run(d.name+"/rescan", func(b *testing.B) {
			h, err := New(opts(d.dir))
			require.NoError(b, err)
			defer h.Close()
			h.Watch()
			touch := filepath.Join(d.dir, "touch.tmp")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if i%2 == 0 {
					require.NoError(b, os.WriteFile(touch, nil, 0o600))
				} else {
					require.NoError(b, os.Remove(touch))
				}
				h.scan.next, h.scan.cost = time.Time{}, 0
				b.StartTimer()
				h.Watch()
			}
			b.StopTimer()
			os.Remove(touch)
		})
	}
}

// allRead: every capture file without spans is a capture-only rollout
// whose file was read.
func allRead(h *Handler) bool {
	if len(h.live.seen) > 0 {
		return false
	}
	for _, c := range h.live.captures {
		if !c.read {
			return false
		}
	}
	return true
}
