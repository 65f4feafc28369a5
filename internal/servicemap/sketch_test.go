// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var testQuantiles = []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}

func mustSketch(t require.TestingT, a float64, bins int) *Sketch {
	s, err := NewSketch(a, bins)
	require.NoError(t, err)
	return s
}

func sketchOf(t require.TestingT, a float64, bins int, xs []float64) *Sketch {
	s := mustSketch(t, a, bins)
	for _, x := range xs {
		s.Add(x)
	}
	return s
}

// exactQuantile is the nearest-rank quantile of xs: the smallest x with at
// least q·n values ≤ x.
func exactQuantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[rank(q, uint64(len(s)))-1]
}

// state is a sketch's observable state, for equality checks.
type state struct {
	Acc         float64
	Offset      int
	Counts      []uint64
	Zero, Count uint64
	MinV, MaxV  float64
}

func stateOf(s *Sketch) state {
	st := state{Acc: s.accuracy, Counts: slices.Clone(s.counts), Zero: s.zero, Count: s.count, MinV: s.min, MaxV: s.max}
	if len(s.counts) > 0 {
		st.Offset = s.offset
	} else {
		st.Counts = nil
	}
	return st
}

// checkInvariants holds for every sketch: counts add up, ends are non-empty,
// the window is at most maxBins wide.
func checkInvariants(t require.TestingT, s *Sketch) {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	require.Equal(t, s.count, n+s.zero, "count")
	require.LessOrEqual(t, len(s.counts), s.maxBins, "window")
	require.LessOrEqual(t, cap(s.counts), s.maxBins, "memory")
	if len(s.counts) > 0 {
		require.NotZero(t, s.counts[0], "first bucket")
		require.NotZero(t, s.counts[len(s.counts)-1], "last bucket")
	}
}

// genLatency draws latencies in ms spread over many orders of magnitude,
// with some exact zeros and many repeats.
func genLatency(lo, hi float64) *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		if rapid.IntRange(0, 19).Draw(t, "zero") == 0 {
			return 0
		}
		return math.Pow(10, rapid.Float64Range(lo, hi).Draw(t, "exp"))
	})
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		n    uint64
		want uint64
	}{
		{0, 10, 1}, {0.1, 10, 1}, {0.11, 10, 2}, {0.5, 10, 5}, {0.9, 10, 9}, {0.99, 10, 10}, {1, 10, 10},
		{0.7, 90, 63}, {0.7, 170, 119}, {0.5, 1, 1}, {0.99, 1000, 990}, {0.999, 1000, 999},
	} {
		assert.Equal(t, tc.want, rank(tc.q, tc.n), "rank(%v, %d)", tc.q, tc.n)
	}
}

func TestSketchQuantilesWithinRelativeError(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SampledFrom([]float64{0.001, 0.01, 0.02, 0.05, 0.2}).Draw(t, "accuracy")
		xs := rapid.SliceOfN(genLatency(-3, 4), 1, 400).Draw(t, "xs")
		s := sketchOf(t, a, BinsFor(a, 1e7), xs) // 7 decades
		checkInvariants(t, s)
		qs := append(slices.Clone(testQuantiles), rapid.Float64Range(0, 1).Draw(t, "q"))
		for _, q := range qs {
			exact := exactQuantile(xs, q)
			got := s.Quantile(q)
			if math.Abs(got-exact) > a*exact*(1+1e-9) {
				t.Fatalf("q=%v: sketch %v, exact %v, relative error %v > %v", q, got, exact, math.Abs(got-exact)/exact, a)
			}
		}
		assert.Equal(t, slices.Min(xs), s.Min())
		assert.Equal(t, slices.Max(xs), s.Max())
		assert.Equal(t, uint64(len(xs)), s.Count())
	})
}

func TestSketchMergeIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bins := rapid.IntRange(2, 80).Draw(t, "bins")
		// 15 decades with few bins: folding happens often.
		gen := genLatency(-6, 9)
		xa := rapid.SliceOf(gen).Draw(t, "a")
		xb := rapid.SliceOf(gen).Draw(t, "b")
		all := append(slices.Clone(xa), xb...)

		merged := sketchOf(t, 0.01, bins, xa)
		merged.Merge(sketchOf(t, 0.01, bins, xb))
		checkInvariants(t, merged)

		whole := sketchOf(t, 0.01, bins, all)
		require.Equal(t, stateOf(whole), stateOf(merged), "merge(a, b) != sketch(a ∪ b)")

		reversed := sketchOf(t, 0.01, bins, xb)
		reversed.Merge(sketchOf(t, 0.01, bins, xa))
		require.Equal(t, stateOf(whole), stateOf(reversed), "merge(b, a) != sketch(a ∪ b)")

		perm := rapid.Permutation(all).Draw(t, "perm")
		require.Equal(t, stateOf(whole), stateOf(sketchOf(t, 0.01, bins, perm)), "order matters")
	})
}

func TestSketchFoldingKeepsUpperQuantiles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const a = 0.01
		bins := rapid.IntRange(2, 300).Draw(t, "bins")
		xs := rapid.SliceOfN(genLatency(-4, 6), 1, 300).Draw(t, "xs")
		s := sketchOf(t, a, bins, xs)
		checkInvariants(t, s)
		if len(s.counts) == 0 {
			return
		}
		floor := s.top() - bins + 1
		for _, q := range testQuantiles {
			exact := exactQuantile(xs, q)
			got := s.Quantile(q)
			if exact > 0 && s.index(exact) > floor {
				if math.Abs(got-exact) > a*exact*(1+1e-9) {
					t.Fatalf("q=%v above the fold: sketch %v, exact %v", q, got, exact)
				}
			} else if got < exact*(1-a)*(1-1e-9) {
				// Folded values are only ever overestimated.
				t.Fatalf("q=%v in the fold: sketch %v underestimates %v", q, got, exact)
			}
		}
	})
}

func TestSketchJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bins := rapid.IntRange(2, 200).Draw(t, "bins")
		xs := rapid.SliceOf(genLatency(-6, 9)).Draw(t, "xs")
		s := sketchOf(t, 0.01, bins, xs)
		back, err := sketchFromJSON(s.toJSON(), bins)
		require.NoError(t, err)
		require.Equal(t, stateOf(s), stateOf(back))

		// Read with a smaller bound: the same as having used it all along.
		narrow := rapid.IntRange(2, bins).Draw(t, "narrow")
		back, err = sketchFromJSON(s.toJSON(), narrow)
		require.NoError(t, err)
		checkInvariants(t, back)
		require.Equal(t, stateOf(sketchOf(t, 0.01, narrow, xs)), stateOf(back))
	})
}

func TestSketchMergeOtherAccuracy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a1 := rapid.SampledFrom([]float64{0.005, 0.01, 0.03}).Draw(t, "a1")
		a2 := rapid.SampledFrom([]float64{0.01, 0.02, 0.05}).Draw(t, "a2")
		xa := rapid.SliceOf(genLatency(-2, 4)).Draw(t, "a")
		xb := rapid.SliceOfN(genLatency(-2, 4), 1, 200).Draw(t, "b")
		s := sketchOf(t, a1, BinsFor(a1, 1e6), xa)
		s.Merge(sketchOf(t, a2, BinsFor(a2, 1e6), xb))
		checkInvariants(t, s)
		all := append(slices.Clone(xa), xb...)
		bound := (1+a1)*(1+a2) - 1
		for _, q := range testQuantiles {
			exact := exactQuantile(all, q)
			if got := s.Quantile(q); math.Abs(got-exact) > bound*exact*(1+1e-9) {
				t.Fatalf("q=%v: %v vs exact %v beyond %v", q, got, exact, bound)
			}
		}
		assert.Equal(t, slices.Min(all), s.Min())
		assert.Equal(t, slices.Max(all), s.Max())
	})
}

func TestSketchEdgeCases(t *testing.T) {
	s := mustSketch(t, 0.01, 16)
	assert.Zero(t, s.Quantile(0.5), "empty")
	s.Add(math.NaN())
	s.Add(math.Inf(1))
	s.Add(math.Inf(-1))
	s.AddN(5, 0)
	assert.Zero(t, s.Count(), "NaN, Inf and n=0 are ignored")

	s.Add(-3) // counts as 0
	s.Add(0)
	s.Add(100)
	assert.Equal(t, uint64(3), s.Count())
	assert.Zero(t, s.Min())
	assert.Zero(t, s.Quantile(0.5))
	assert.InDelta(t, 100, s.Quantile(1), 1)
	assert.Equal(t, 100.0, s.Quantile(1), "clamped to the exact max")
	assert.Zero(t, s.Quantile(math.NaN()))

	// Values far apart never allocate more than maxBins buckets.
	far := sketchOf(t, 0.01, 16, []float64{1e-300, 1e300, 5e-324, math.MaxFloat64, 1})
	checkInvariants(t, far)
	assert.Equal(t, math.MaxFloat64, far.Quantile(1))

	// A single value reads back exactly (clamped to min = max).
	one := sketchOf(t, 0.01, 16, []float64{12.345})
	for _, q := range testQuantiles {
		assert.Equal(t, 12.345, one.Quantile(q))
	}

	for _, bad := range []struct {
		a    float64
		bins int
	}{{0, 10}, {1, 10}, {-0.1, 10}, {math.NaN(), 10}, {0.01, 1}, {MinRelativeAccuracy / 2, 10}} {
		_, err := NewSketch(bad.a, bad.bins)
		assert.Error(t, err, "%v", bad)
	}
}

func TestSketchFromJSONRejects(t *testing.T) {
	good := sketchOf(t, 0.01, 64, []float64{1, 2, 3}).toJSON()
	for name, mutate := range map[string]func(*sketchJSON){
		"accuracy 0":       func(j *sketchJSON) { j.RelativeAccuracy = 0 },
		"accuracy 1":       func(j *sketchJSON) { j.RelativeAccuracy = 1 },
		"min > max":        func(j *sketchJSON) { j.Min, j.Max = 5, 1 },
		"negative min":     func(j *sketchJSON) { j.Min = -1 },
		"index too big":    func(j *sketchJSON) { j.Bins["16777217"] = 1 },
		"index too low":    func(j *sketchJSON) { j.Bins["-16777217"] = 1 },
		"index not an int": func(j *sketchJSON) { j.Bins["1.5"] = 1 },
		"count overflow":   func(j *sketchJSON) { j.Bins["7"] = math.MaxUint64 },
		"zero overflow":    func(j *sketchJSON) { j.ZeroCount = math.MaxUint64 },
	} {
		j := good
		j.Bins = maps.Clone(good.Bins)
		mutate(&j)
		_, err := sketchFromJSON(j, 64)
		assert.ErrorIs(t, err, errBadSketch, name)
	}
	// Empty buckets are tolerated.
	j := good
	j.Bins = maps.Clone(good.Bins)
	j.Bins["-5"], j.Bins["200"] = 0, 0
	s, err := sketchFromJSON(j, 64)
	require.NoError(t, err)
	checkInvariants(t, s)
	back, _ := sketchFromJSON(good, 64)
	assert.Equal(t, stateOf(back), stateOf(s))
}

func TestBinsForCoversTheRange(t *testing.T) {
	for _, a := range []float64{0.001, 0.01, 0.05} {
		for _, r := range []float64{10, 1e6, 1e9} {
			bins := BinsFor(a, r)
			for _, lo := range []float64{1e-3, 0.7, 1, 3.3} {
				xs := []float64{lo, lo * r * (1 - 1e-12), lo * math.Sqrt(r)}
				s := sketchOf(t, a, bins, xs)
				for _, q := range testQuantiles {
					exact := exactQuantile(xs, q)
					assert.InDelta(t, exact, s.Quantile(q), a*exact*(1+1e-9), "a=%v r=%v lo=%v q=%v", a, r, lo, q)
				}
			}
		}
	}
	assert.Equal(t, 1038, BinsFor(0.01, 1e9))
}
