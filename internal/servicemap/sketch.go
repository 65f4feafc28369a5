// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Sketch is a mergeable quantile sketch with a relative-error guarantee: a
// log-bucketed histogram in the manner of DDSketch, written for this package.
//
// A value x > 0 goes to bucket i = ceil(log_γ x), which holds (γ^(i-1), γ^i],
// with γ = (1+a)/(1-a) for the relative accuracy a. A bucket is read back as
// 2γ^i/(γ+1), which is within a·x of every x in it, so every quantile is
// returned within relative error a of the exact one (nearest-rank quantile,
// see rank), clamped to the exact minimum and maximum. Values ≤ 0 are
// counted in a zero bucket and read back as 0.
//
// Bound. The buckets are a dense window of at most maxBins indices ending at
// the largest index seen: a value whose index is below
// top−maxBins+1 (more than about γ^(maxBins−1) times smaller than the largest
// value: 1e9 for a = 1% and 1038 bins) is counted in the lowest bucket of the
// window and so overestimated; quantiles at or above that floor keep the
// guarantee. Because folding only depends on the largest index, the state is a
// function of the multiset of values added: merging two sketches is exact,
// Merge(sketch(A), sketch(B)) == sketch(A ∪ B) in any order.
//
// A Sketch is not safe for concurrent use.
type Sketch struct {
	accuracy float64
	logGamma float64 // ln γ
	maxBins  int

	offset int      // index of counts[0]
	counts []uint64 // counts[0] and counts[len-1] are non-zero when len > 0
	zero   uint64   // values ≤ 0
	count  uint64   // all values
	min    float64
	max    float64
}

// Default sketch parameters.
const (
	DefaultRelativeAccuracy = 0.01
	// DefaultDynamicRange is the ratio between the largest and the smallest
	// latency of one edge that the default bucket bound keeps within the
	// accuracy: 1e9 is 1 µs next to 16 minutes, or 1 ms next to 11 days.
	DefaultDynamicRange = 1e9
	// maxIndex bounds |index| (and offset) so index arithmetic never
	// overflows whatever a file says.
	maxIndex = 1 << 24
	minBins  = 2
	// MinRelativeAccuracy keeps every float64 latency inside ±maxIndex.
	MinRelativeAccuracy = 1e-4
)

// NewSketch returns an empty sketch with relative accuracy
// MinRelativeAccuracy ≤ accuracy < 1 and at most maxBins buckets (at least 2).
func NewSketch(accuracy float64, maxBins int) (*Sketch, error) {
	if !(accuracy >= MinRelativeAccuracy && accuracy < 1) {
		return nil, fmt.Errorf("relative accuracy must be in [%v, 1), got %v", MinRelativeAccuracy, accuracy)
	}
	if maxBins < minBins {
		return nil, fmt.Errorf("max bins must be at least %d, got %d", minBins, maxBins)
	}
	return &Sketch{
		accuracy: accuracy,
		// γ = (1+a)/(1-a) = 1 + 2a/(1-a); Log1p keeps precision for small a.
		logGamma: math.Log1p(2 * accuracy / (1 - accuracy)),
		maxBins:  maxBins,
	}, nil
}

// BinsFor is the number of buckets that keeps every value within the
// relative accuracy when the largest is at most dynamicRange times the
// smallest: ceil(log_γ dynamicRange) + 1 (1038 for 1% and 1e9).
func BinsFor(accuracy, dynamicRange float64) int {
	logGamma := math.Log1p(2 * accuracy / (1 - accuracy))
	return max(minBins, int(math.Ceil(math.Log(dynamicRange)/logGamma))+1)
}

// RelativeAccuracy is the sketch's a.
func (s *Sketch) RelativeAccuracy() float64 { return s.accuracy }

// Count is the number of values added.
func (s *Sketch) Count() uint64 { return s.count }

// Min is the smallest value added (negative values count as 0), 0 when empty.
func (s *Sketch) Min() float64 { return s.min }

// Max is the largest value added, 0 when empty.
func (s *Sketch) Max() float64 { return s.max }

// Bins is the number of buckets held (the memory bound is maxBins).
func (s *Sketch) Bins() int { return len(s.counts) }

// Add records one value. NaN and ±Inf are ignored; negative values count as 0.
func (s *Sketch) Add(x float64) { s.AddN(x, 1) }

// AddN records value x n times.
func (s *Sketch) AddN(x float64, n uint64) {
	if n == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	if x < 0 {
		x = 0
	}
	s.noteMinMax(x, x, n)
	if x == 0 {
		s.zero += n
		return
	}
	s.addIndex(s.index(x), n)
}

func (s *Sketch) noteMinMax(lo, hi float64, n uint64) {
	if s.count == 0 || lo < s.min {
		s.min = lo
	}
	if s.count == 0 || hi > s.max {
		s.max = hi
	}
	s.count += n
}

// index is ceil(log_γ x); the clamp to ±maxIndex is never reached at
// MinRelativeAccuracy or coarser (ln(MaxFloat64)/ln γ ≈ 3.5e6).
func (s *Sketch) index(x float64) int {
	f := math.Ceil(math.Log(x) / s.logGamma)
	switch {
	case f > maxIndex:
		return maxIndex
	case f < -maxIndex:
		return -maxIndex
	}
	return int(f)
}

// value is bucket i read back: the point with equal relative distance to
// both ends of (γ^(i-1), γ^i].
func (s *Sketch) value(i int) float64 {
	return 2 * math.Exp(float64(i)*s.logGamma) / (1 + math.Exp(s.logGamma))
}

func (s *Sketch) top() int { return s.offset + len(s.counts) - 1 }

// addIndex adds n (> 0) to bucket i, keeping the window and its folding.
func (s *Sketch) addIndex(i int, n uint64) {
	if len(s.counts) == 0 {
		s.offset = i
		s.counts = append(s.counts[:0], n)
		return
	}
	if top := s.top(); i > top {
		s.reshape(max(s.offset, i-s.maxBins+1), i)
	} else if floor := top - s.maxBins + 1; i < floor {
		i = floor
	}
	if i < s.offset {
		s.reshape(i, s.top())
	}
	s.counts[i-s.offset] += n
}

// reshape makes the window [lo, hi], hi ≥ top: buckets below lo are folded
// into lo. It never holds more than hi−lo+1 ≤ maxBins buckets, however far
// a new value is from the others.
func (s *Sketch) reshape(lo, hi int) {
	n := hi - lo + 1
	if lo == s.offset && n <= cap(s.counts) {
		old := len(s.counts)
		s.counts = s.counts[:n]
		clear(s.counts[old:])
		return
	}
	// Headroom, so a run of new extremes does not reallocate every time;
	// never beyond maxBins.
	counts := make([]uint64, n, max(n, min(n+n/4, s.maxBins)))
	for j, c := range s.counts {
		counts[max(s.offset+j, lo)-lo] += c
	}
	s.counts, s.offset = counts, lo
}

// Merge adds every value of o to s. It is exact (see Sketch) when both have
// the same relative accuracy; otherwise each of o's buckets is re-added at
// its read-back value, and the error of those values becomes at most about
// a_s + a_o.
func (s *Sketch) Merge(o *Sketch) {
	if o == nil || o.count == 0 {
		return
	}
	if o.accuracy != s.accuracy {
		s.noteMinMax(o.min, o.max, 0)
		s.count += o.zero
		s.zero += o.zero
		for j, c := range o.counts {
			if c > 0 {
				s.count += c
				s.addIndex(s.index(o.value(o.offset+j)), c)
			}
		}
		return
	}
	s.noteMinMax(o.min, o.max, o.zero)
	s.zero += o.zero
	if len(o.counts) == 0 {
		return
	}
	// Reserve the union window once, then add bucket by bucket.
	hi, lo := o.top(), o.offset
	if len(s.counts) > 0 {
		hi, lo = max(hi, s.top()), min(lo, s.offset)
	}
	lo = max(lo, hi-s.maxBins+1)
	if len(s.counts) == 0 {
		s.offset, s.counts = lo, make([]uint64, hi-lo+1)
	} else {
		s.reshape(lo, hi)
	}
	for j, c := range o.counts {
		if c > 0 {
			s.count += c
			s.addIndex(o.offset+j, c)
		}
	}
}

// Clone returns a deep copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.counts = append([]uint64(nil), s.counts...)
	return &c
}

// rank is the 1-based nearest rank of quantile q among n values:
// ceil(q·n), at least 1. The tiny shrink keeps q·n that is an integer up to
// float error (0.7·90 = 62.99999999999999) on that integer.
func rank(q float64, n uint64) uint64 {
	r := uint64(math.Ceil(q * float64(n) * (1 - 1e-12)))
	return min(max(r, 1), n)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1, nearest rank) within relative
// error RelativeAccuracy, or 0 when the sketch is empty.
func (s *Sketch) Quantile(q float64) float64 {
	if s.count == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	r := rank(q, s.count)
	if r <= s.zero {
		return 0
	}
	cum := s.zero
	for j, c := range s.counts {
		cum += c
		if cum >= r {
			return min(max(s.value(s.offset+j), s.min), s.max)
		}
	}
	return s.max // unreachable while count == zero + Σcounts
}

// sketchJSON is the serialized form: enough for another process to merge.
// Bins maps a bucket index (decimal) to its count; empty buckets are left
// out. Bucket i holds (γ^(i-1), γ^i] ms with γ = (1+a)/(1-a).
type sketchJSON struct {
	RelativeAccuracy float64           `json:"relative_accuracy"`
	Min              float64           `json:"min"`
	Max              float64           `json:"max"`
	ZeroCount        uint64            `json:"zero_count"`
	Bins             map[string]uint64 `json:"bins"`
}

func (s *Sketch) toJSON() sketchJSON {
	bins := make(map[string]uint64, len(s.counts))
	s.eachBin(func(i int, c uint64) { bins[strconv.Itoa(i)] = c })
	return sketchJSON{
		RelativeAccuracy: s.accuracy,
		Min:              s.min,
		Max:              s.max,
		ZeroCount:        s.zero,
		Bins:             bins,
	}
}

// eachBin calls f for every non-empty bucket in increasing index order.
func (s *Sketch) eachBin(f func(index int, count uint64)) {
	for j, c := range s.counts {
		if c > 0 {
			f(s.offset+j, c)
		}
	}
}

var errBadSketch = errors.New("invalid sketch")

// sketchFromJSON checks a serialized sketch and rebuilds it with maxBins
// (a sketch wider than maxBins is folded). Empty buckets are tolerated.
func sketchFromJSON(j sketchJSON, maxBins int) (*Sketch, error) {
	s, err := NewSketch(j.RelativeAccuracy, maxBins)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSketch, err)
	}
	type bin struct {
		i int
		c uint64
	}
	bins := make([]bin, 0, len(j.Bins))
	n := j.ZeroCount
	for k, c := range j.Bins {
		i, err := strconv.Atoi(k)
		if err != nil || i < -maxIndex || i > maxIndex {
			return nil, fmt.Errorf("%w: bucket index %q", errBadSketch, k)
		}
		if n+c < n {
			return nil, fmt.Errorf("%w: count overflows", errBadSketch)
		}
		n += c
		if c > 0 {
			bins = append(bins, bin{i, c})
		}
	}
	if n == 0 {
		return s, nil
	}
	if !finiteNonNeg(j.Min) || !finiteNonNeg(j.Max) || j.Min > j.Max {
		return nil, fmt.Errorf("%w: min %v, max %v", errBadSketch, j.Min, j.Max)
	}
	s.min, s.max, s.count, s.zero = j.Min, j.Max, n, j.ZeroCount
	if len(bins) == 0 {
		return s, nil
	}
	sort.Slice(bins, func(a, b int) bool { return bins[a].i < bins[b].i })
	top := bins[len(bins)-1].i
	start := max(bins[0].i, top-maxBins+1)
	s.offset = start
	s.counts = make([]uint64, top-start+1)
	for _, b := range bins {
		s.counts[max(b.i, start)-start] += b.c
	}
	return s, nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }
