// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package dedup

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// TestDedupKeyIsTheOriginalTrace: the key reads nemo.gym.original_trace_id
// when it is 32 hex digits, else the span's trace id.
func TestDedupKeyIsTheOriginalTrace(t *testing.T) {
	s := ptrace.NewSpan()
	s.SetTraceID(pcommon.TraceID{1})
	s.SetSpanID(pcommon.SpanID{2})
	own := KeyOf(s)
	s.Attributes().PutStr(gymconv.OriginalTraceAttribute, "not hex")
	assert.Equal(t, own, KeyOf(s))
	moved := ptrace.NewSpan()
	moved.SetTraceID(pcommon.TraceID{7})
	moved.SetSpanID(pcommon.SpanID{2})
	moved.Attributes().PutStr(gymconv.OriginalTraceAttribute, pcommon.TraceID{1}.String())
	assert.Equal(t, own, KeyOf(moved))
	other := ptrace.NewSpan()
	other.SetTraceID(pcommon.TraceID{1})
	other.SetSpanID(pcommon.SpanID{3})
	assert.NotEqual(t, own, KeyOf(other))
}

// TestDedupWindowConcurrentClaims: pushes claiming overlapping keys at once
// each get every key exactly once as new across all of them.
func TestDedupWindowConcurrentClaims(t *testing.T) {
	w := NewWindow(1 << 12)
	keys := make([]Key, 200)
	for i := range keys {
		keys[i] = MakeKey(pcommon.TraceID{1}, pcommon.SpanID{byte(i), 1})
	}
	var mu sync.Mutex
	news := map[Key]int{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			push := w.NewPush()
			claims := make([]Claim, len(keys))
			w.Claim(push, keys, claims)
			w.Settle(push, keys, claims, func(int) bool { return true })
			mu.Lock()
			defer mu.Unlock()
			for i, c := range claims {
				if c == ClaimNew {
					news[keys[i]]++
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, news, len(keys))
	for _, n := range news {
		assert.Equal(t, 1, n)
	}
}

// TestDedupWindowClaims: a key written before is dropped, a key twice in
// one push is written once, a key another push in flight claims is handed
// back, a failed push releases its claims, keys remembered from an earlier
// run are dropped, and a span without a span id is always new.
func TestDedupWindowClaims(t *testing.T) {
	w := NewWindow(16)
	k := func(i byte) Key { return MakeKey(pcommon.TraceID{1}, pcommon.SpanID{i}) }
	noID := MakeKey(pcommon.TraceID{1}, pcommon.SpanID{})

	first, second := w.NewPush(), w.NewPush()
	keys := []Key{k(1), k(2), k(1), noID}
	got := make([]Claim, len(keys))
	w.Claim(first, keys, got)
	assert.Equal(t, []Claim{ClaimNew, ClaimNew, ClaimWritten, ClaimNew}, got)

	other := make([]Claim, 2)
	w.Claim(second, []Key{k(2), noID}, other)
	assert.Equal(t, []Claim{ClaimInFlight, ClaimNew}, other)

	w.Settle(first, keys, got, func(i int) bool { return i != 1 }) // k(2) failed
	again := make([]Claim, 2)
	w.Claim(w.NewPush(), []Key{k(1), k(2)}, again)
	assert.Equal(t, []Claim{ClaimWritten, ClaimNew}, again, "written stays; failed is released")

	w.Remember([]Key{k(9)})
	old := make([]Claim, 1)
	w.Claim(w.NewPush(), []Key{k(9)}, old)
	assert.Equal(t, []Claim{ClaimWritten}, old)

	assert.Nil(t, NewWindow(0), "dedup_window_spans 0: no window")
}
