// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"

	"encoding/binary"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Deduplication (design §4.6): a span whose key the exporter already wrote is
// dropped and counted. Duplicates reach the exporter in two ways, both
// around a crash: an OTLP sender retries a batch whose response was lost
// when the collector died (the collector had taken it), and the gym
// processor hands on again, after a restart, the rounds it had not marked
// delivered. The processor may give the second copy another trace id than
// the first (it rewrites trace ids per rollout), so the key is the span's
// original trace id (nemo.gym.original_trace_id, which the processor sets
// on every span it moves, else its trace id) and its span id.
//
// The window holds the keys of the last dedup_window_spans spans written:
// it must hold every span written between a batch's first copy and the
// sender's last retry of it (the README sizes the default). The window
// survives restarts: the journal index (journal.go) records each written
// span's key, and a start reads them back.
//
// Claims make concurrent pushes of one span safe: a push claims its spans'
// keys before it encodes them; a key claimed by another push still in
// flight is handed back to the caller as not written (retried, it then
// finds the key written and is dropped), and a push that fails releases its
// claims.

// dedupKey identifies a span for deduplication: its span id and a 64-bit
// FNV-1a hash of its original trace id.
type dedupKey [16]byte

func dedupKeyOf(span ptrace.Span) dedupKey {
	tid := span.TraceID()
	if orig, ok := gymconv.OriginalTraceID(span.Attributes()); ok {
		tid = orig
	}
	return makeDedupKey(tid, span.SpanID())
}

func makeDedupKey(tid pcommon.TraceID, sid pcommon.SpanID) dedupKey {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, c := range tid {
		h ^= uint64(c)
		h *= prime64
	}
	var k dedupKey
	copy(k[:8], sid[:])
	binary.LittleEndian.PutUint64(k[8:], h)
	return k
}

// claim is what the window said of one span of a push.
type claim uint8

const (
	claimNew      claim = iota // this push writes it
	claimWritten               // written before (or twice in this push): dropped
	claimInFlight              // another push in flight writes it: not written, handed back
)

// dedupWindow is the bounded set of keys written, and the keys claimed by
// pushes in flight (a small map of its own: the window's map is large and
// each access to it a cache miss, so a span costs one lookup and one insert
// there).
type dedupWindow struct {
	mu       sync.Mutex
	keys     *bounded.Ring[dedupKey, struct{}]
	inFlight map[dedupKey]uint32 // key → the push claiming it
	pushes   atomic.Uint32
}

func newDedupWindow(size int) *dedupWindow {
	if size <= 0 {
		return nil
	}
	return &dedupWindow{keys: bounded.NewRing[dedupKey, struct{}](size), inFlight: map[dedupKey]uint32{}}
}

// newPush returns an id for one push's claims.
func (w *dedupWindow) newPush() uint32 {
	for {
		if id := w.pushes.Add(1); id != 0 {
			return id
		}
	}
}

// claim fills out[i] for keys[i], claiming the new ones for push. A span
// without a span id cannot be told from another: it is always new.
func (w *dedupWindow) claim(push uint32, keys []dedupKey, out []claim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, k := range keys {
		if [8]byte(k[:8]) == ([8]byte{}) {
			out[i] = claimNew
			continue
		}
		if _, written := w.keys.Get(k); written {
			out[i] = claimWritten
			continue
		}
		switch owner, ok := w.inFlight[k]; {
		case !ok:
			w.inFlight[k] = push
			out[i] = claimNew
		case owner == push:
			out[i] = claimWritten // twice in this push
		default:
			out[i] = claimInFlight
		}
	}
}

// settle ends push's claims: the keys of spans written become written, the
// others are released.
func (w *dedupWindow) settle(push uint32, keys []dedupKey, claims []claim, written func(i int) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, k := range keys {
		if claims[i] != claimNew || [8]byte(k[:8]) == ([8]byte{}) {
			continue
		}
		if w.inFlight[k] != push {
			continue
		}
		delete(w.inFlight, k)
		if written(i) {
			w.keys.PutNew(k, struct{}{}) // claimed, so not in the window
		}
	}
}

// remember adds keys written by an earlier run (read back at start).
func (w *dedupWindow) remember(keys []dedupKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		w.keys.Put(k, struct{}{})
	}
}
