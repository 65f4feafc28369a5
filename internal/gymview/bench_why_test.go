// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/gymview/gymviewtest"
)

// gymRowBytes is the size of a synthetic Gym output row (real ones, which
// hold whole responses and trajectories, are 10 KiB and more).
const gymRowBytes = 2 << 10

var whyBenchDirs struct {
	once             sync.Once
	captures, output string
	err              error
}

// whyBenchDir is a run of 100,000 rollouts whose rollouts.jsonl lines have a
// time split, and Gym's output of it, beside benchDir's.
func whyBenchDir(b *testing.B) (captures, output string) {
	b.Helper()
	run, _, _ := benchDir(b)
	whyBenchDirs.once.Do(func() {
		root := filepath.Dir(run)
		whyBenchDirs.captures, whyBenchDirs.output = filepath.Join(root, "why100k"), filepath.Join(root, "why100k-gym")
		r := gymviewtest.Run{ID: "bench", Rollouts: benchRollouts, FailedEvery: 7, InFlight: 8, Split: true}
		if _, err := os.Stat(filepath.Join(whyBenchDirs.output, "rollouts.jsonl")); err == nil {
			return
		}
		if whyBenchDirs.err = gymviewtest.WriteRun(whyBenchDirs.captures, r); whyBenchDirs.err == nil {
			whyBenchDirs.err = gymviewtest.WriteGymOutput(whyBenchDirs.output, r, gymRowBytes)
		}
	})
	require.NoError(b, whyBenchDirs.err)
	return whyBenchDirs.captures, whyBenchDirs.output
}

// BenchmarkWhy100k: the first page of a run of 100,000 rollouts with their
// time splits and Gym's output (100,000 rows of 2 KiB): cold (a viewer just
// started: rollouts.jsonl and Gym's three files read, the run sorted), and
// warm, sorted by reward, by a category, filtered, and the run's
// percentiles. Compare cold with BenchmarkFirstPage100k/cold for what the
// split and Gym's output cost.
func BenchmarkWhy100k(b *testing.B) {
	captures, output := whyBenchDir(b)
	opts := Options{CaptureDir: captures, GymOutput: output}
	const target = "/api/rollouts?run=bench"
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			h, err := New(opts)
			require.NoError(b, err)
			p := firstPage(b, h, target+"&sort=id&order=asc")
			if p.All != benchRollouts || p.Rows[0].Gym == nil || p.Rows[0].TimeSplitMS == nil {
				b.Fatalf("listed %d rollouts, first row %+v", p.All, p.Rows[0])
			}
			h.Close()
		}
	})
	for name, target := range map[string]string{
		"warm_lowest_reward": target + "&sort=reward&order=asc",
		"warm_most_model":    target + "&sort=model_ms",
		"warm_unhealthy":     target + "&unhealthy=1",
		"warm_timesplit":     "/api/timesplit?run=bench",
		"warm_gymoutput":     "/api/gymoutput?run=bench",
	} {
		b.Run(name, func(b *testing.B) {
			h, err := New(opts)
			require.NoError(b, err)
			defer h.Close()
			get(b, h, target)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := get(b, h, target)
				require.Equal(b, 200, rec.Code)
			}
		})
	}
}

// TestSyntheticWhy: the benchmark's synthetic split and Gym output are
// read as they claim.
func TestSyntheticWhy(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	r := gymviewtest.Run{ID: "syn", Rollouts: 120, InFlight: 4, Split: true}
	require.NoError(t, gymviewtest.WriteRun(dir, r))
	require.NoError(t, gymviewtest.WriteGymOutput(out, r, gymRowBytes))
	h := newTestHandler(t, dir, Options{GymOutput: out})
	var g gymPage
	require.NoError(t, json.Unmarshal(get(t, h, "/api/gymoutput?run=syn").Body.Bytes(), &g))
	assert.Equal(t, 116, g.Joined)
	assert.Equal(t, 6, g.Unhealthy) // 0, 20, ..., 100
	for _, f := range g.Files {
		assert.Zero(t, f.Malformed, f.Name)
	}
	var s splitStats
	require.NoError(t, json.Unmarshal(get(t, h, "/api/timesplit?run=syn").Body.Bytes(), &s))
	assert.Equal(t, 116, s.WithSplit)
	assert.Zero(t, s.Malformed)
}
