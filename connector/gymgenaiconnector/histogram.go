// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymgenaiconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymgenaiconnector"

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Bucket boundaries: the GenAI conventions' advice for each histogram.
var (
	tokenBounds    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBounds = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftBounds     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
)

// histogram is one cumulative explicit-bucket series.
type histogram struct {
	count    uint64
	sum      float64
	min, max float64
	buckets  []uint64 // len(bounds)+1
}

func (h *histogram) observe(bounds []float64, v float64) {
	if h.buckets == nil {
		h.buckets = make([]uint64, len(bounds)+1)
	}
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
	h.buckets[sort.SearchFloat64s(bounds, v)]++
}

func (h *histogram) point(dp pmetric.HistogramDataPoint, bounds []float64) {
	dp.SetCount(h.count)
	dp.SetSum(h.sum)
	dp.SetMin(h.min)
	dp.SetMax(h.max)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(h.buckets)
}

// series are the series of one metric by their attributes, bounded: past
// max, new attribute sets share the overflow series.
type series[V any] struct {
	byKey    map[string]*entry[V]
	keys     []string // in first-seen order, for stable output
	overflow *entry[V]
	max      int
}

type entry[V any] struct {
	attrs pcommon.Map
	v     V
}

func newSeries[V any](max int) *series[V] {
	return &series[V]{byKey: map[string]*entry[V]{}, max: max}
}

// get is the series of attrs (given as key/value pairs, "" values left
// out), made when new.
func (s *series[V]) get(kv ...string) *V {
	key := ""
	for i := 0; i+1 < len(kv); i += 2 {
		key += kv[i] + "\x00" + kv[i+1] + "\x00"
	}
	if e, ok := s.byKey[key]; ok {
		return &e.v
	}
	if len(s.byKey) >= s.max {
		if s.overflow == nil {
			s.overflow = &entry[V]{attrs: pcommon.NewMap()}
			s.overflow.attrs.PutBool("otel.metric.overflow", true)
		}
		return &s.overflow.v
	}
	e := &entry[V]{attrs: pcommon.NewMap()}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			e.attrs.PutStr(kv[i], kv[i+1])
		}
	}
	s.byKey[key] = e
	s.keys = append(s.keys, key)
	return &e.v
}

// isOverflow reports whether v is the overflow series.
func (s *series[V]) isOverflow(v *V) bool {
	return s.overflow != nil && v == &s.overflow.v
}

func (s *series[V]) each(f func(attrs pcommon.Map, v *V)) {
	for _, k := range s.keys {
		e := s.byKey[k]
		f(e.attrs, &e.v)
	}
	if s.overflow != nil {
		f(s.overflow.attrs, &s.overflow.v)
	}
}
