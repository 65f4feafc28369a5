// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Attribute names the layout reads.
const (
	attrRolloutID       = gymconv.RolloutAttribute
	attrRunID           = gymconv.RunAttribute     // resource
	attrSpanRunID       = gymconv.SpanRunAttribute // span, newer Gym
	attrServiceName     = gymconv.ServiceNameAttribute
	attrServiceOverride = gymconv.ServiceOverrideAttribute
	maxFileNameBytes    = 255
)

// pathTemplate renders path_template for a (run, rollout).
type pathTemplate struct {
	parts    []string // literal text between placeholders
	holes    []byte   // 'r' for {rollout_id}, 'u' for {run_id}, one per gap
	usesRun  bool
	reserved map[string]bool // names the exporter's other files use
	rotated  string          // the combined file, whose backups are reserved too
}

func newPathTemplate(t string, reserved ...string) *pathTemplate {
	pt := &pathTemplate{reserved: map[string]bool{}}
	for _, r := range reserved {
		if r != "" {
			pt.reserved[r] = true
		}
	}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			pt.parts = append(pt.parts, rest)
			return pt
		}
		switch {
		case strings.HasPrefix(rest[i:], "{rollout_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'r')
			rest = rest[i+len("{rollout_id}"):]
		case strings.HasPrefix(rest[i:], "{run_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'u')
			pt.usesRun = true
			rest = rest[i+len("{run_id}"):]
		default: // Validate refuses this; keep the brace literally
			pt.parts = append(pt.parts, rest[:i+1])
			rest = rest[i+1:]
		}
	}
}

// render returns the file name for a span of rollout in run, or the
// rejection reason.
func (pt *pathTemplate) render(run, rollout string) (string, string) {
	if !gymconv.SafeFileID(rollout) {
		return "", rejectRolloutID
	}
	if pt.usesRun && !gymconv.SafeFileID(run) {
		return "", rejectRunID
	}
	var sb strings.Builder
	for i, p := range pt.parts {
		sb.WriteString(p)
		if i < len(pt.holes) {
			if pt.holes[i] == 'r' {
				sb.WriteString(rollout)
			} else {
				sb.WriteString(run)
			}
		}
	}
	name := sb.String()
	if len(name) > maxFileNameBytes || pt.reserved[name] || (pt.rotated != "" && isBackupName(pt.rotated, name)) {
		return "", rejectRolloutID
	}
	return name, ""
}

func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// serviceOf is the span's service as the gym processor defines it.
func serviceOf(res pcommon.Map) string {
	if s := strAttr(res, attrServiceOverride); s != "" {
		return s
	}
	return strAttr(res, attrServiceName)
}

// boundedTable is a map that forgets its oldest keys beyond a capacity.
type boundedTable[K comparable, V any] struct {
	cap   int
	m     map[K]boundedEntry[V]
	order []boundedSlot[K] // ring of insertion order
	next  int
	gen   uint64
}

type boundedEntry[V any] struct {
	v   V
	gen uint64
}

type boundedSlot[K comparable] struct {
	k   K
	gen uint64
}

func newBoundedTable[K comparable, V any](capacity int) *boundedTable[K, V] {
	return &boundedTable[K, V]{cap: capacity, m: make(map[K]boundedEntry[V])}
}

func (t *boundedTable[K, V]) get(k K) (V, bool) {
	e, ok := t.m[k]
	return e.v, ok
}

func (t *boundedTable[K, V]) len() int { return len(t.m) }

func (t *boundedTable[K, V]) put(k K, v V) {
	if e, ok := t.m[k]; ok {
		t.m[k] = boundedEntry[V]{v: v, gen: e.gen}
		return
	}
	t.gen++
	slot := boundedSlot[K]{k: k, gen: t.gen}
	if len(t.order) < t.cap {
		t.order = append(t.order, slot)
	} else {
		old := t.order[t.next]
		if e, ok := t.m[old.k]; ok && e.gen == old.gen {
			delete(t.m, old.k)
		}
		t.order[t.next] = slot
		t.next = (t.next + 1) % t.cap
	}
	t.m[k] = boundedEntry[V]{v: v, gen: t.gen}
}

// delete forgets k; its ring slot ages out without effect.
func (t *boundedTable[K, V]) delete(k K) { delete(t.m, k) }

// rolloutKey identifies a rollout across runs (ids repeat across runs).
func rolloutKey(run, rollout string) [2]string { return [2]string{run, rollout} }

// spanKey identifies a span for the retry table.
func spanKey(tid pcommon.TraceID, sid pcommon.SpanID) [24]byte {
	var k [24]byte
	copy(k[:16], tid[:])
	copy(k[16:], sid[:])
	return k
}
