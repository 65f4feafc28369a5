// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The order statistics that bound a median, from the binomial distribution:
// with 10 values the 2nd and 9th (97.9%), with 20 the 6th and 15th (95.9%),
// with 5 none reach 95%.
func TestMedianBounds(t *testing.T) {
	for _, tc := range []struct {
		n, lo, hi int
		level     float64
	}{{10, 1, 8, 1 - 2*11.0/1024}, {20, 5, 14, 0.9586105}, {6, 0, 5, 1 - 2.0/64}} {
		lo, hi, level := medianBounds(tc.n)
		assert.Equal(t, []int{tc.lo, tc.hi}, []int{lo, hi}, "n=%d", tc.n)
		assert.InDelta(t, tc.level, level, 1e-6, "n=%d", tc.n)
	}
	_, _, level := medianBounds(5)
	assert.Zero(t, level)
}

// Pairs are made repetition by repetition; a failed run and the profiling
// run (rep 0) make none.
func TestPairedRatios(t *testing.T) {
	run := func(p string, rep int, cpu float64, err string) *runResult {
		return &runResult{Phase: phaseCapture, Pipeline: p, Rep: rep, CPU: cpu, Spans: 1_000_000, Err: err}
	}
	var rs []*runResult
	for rep := 1; rep <= 6; rep++ {
		rs = append(rs, run("C", rep, 10, ""), run("Cj", rep, 10+float64(rep)/10, ""))
	}
	rs = append(rs, run("C", 7, 10, ""), run("Cj", 7, 20, "boom"), run("Cj", 0, 30, ""))
	prs := pairedRatios(rs)
	require.Len(t, prs, 1)
	pr := prs[0]
	assert.Equal(t, "Cj", pr.Pipeline)
	assert.Equal(t, "C", pr.Base)
	assert.InDeltaSlice(t, []float64{1.01, 1.02, 1.03, 1.04, 1.05, 1.06}, pr.Ratios, 1e-9)
	assert.InDelta(t, 1.035, pr.Median, 1e-9)
	assert.InDelta(t, 1.01, pr.Low, 1e-9)
	assert.InDelta(t, 1.06, pr.High, 1e-9)
	assert.Contains(t, pairedTable(prs), "| capture | Cj | C | 6 | 1.035 | 1.010 – 1.060 (96.9%) | 1.035 |")
}
