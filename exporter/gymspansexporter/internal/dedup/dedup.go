// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package dedup is the gymspans exporter's deduplication window (design
// §4.6): a span whose key the exporter already wrote is dropped and
// counted. Duplicates reach the exporter in two ways, both around a crash: an OTLP sender retries a batch whose response was lost
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
// survives restarts: the exporter's journal index records each written
// span's key, and a start reads them back (Remember).
//
// Claims make concurrent pushes of one span safe: a push claims its spans'
// keys before it encodes them; a key claimed by another push still in
// flight is handed back to the caller as not written (retried, it then
// finds the key written and is dropped), and a push that fails releases its
// claims.
package dedup // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Key identifies a span for deduplication: its span id and a 64-bit
// FNV-1a hash of its original trace id.
type Key [16]byte

// KeyOf is span's key: its original trace id when the gym processor moved
// it, else its trace id, and its span id.
func KeyOf(span ptrace.Span) Key {
	tid := span.TraceID()
	if orig, ok := gymconv.OriginalTraceID(span.Attributes()); ok {
		tid = orig
	}
	return MakeKey(tid, span.SpanID())
}

// MakeKey is the key of a span id under a trace id.
func MakeKey(tid pcommon.TraceID, sid pcommon.SpanID) Key {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, c := range tid {
		h ^= uint64(c)
		h *= prime64
	}
	var k Key
	copy(k[:8], sid[:])
	binary.LittleEndian.PutUint64(k[8:], h)
	return k
}

// Claim is what the window said of one span of a push.
type Claim uint8

const (
	ClaimNew      Claim = iota // this push writes it
	ClaimWritten               // written before (or twice in this push): dropped
	ClaimInFlight              // another push in flight writes it: not written, handed back
)

// Window is the bounded set of keys written, and the keys claimed by
// pushes in flight (a small map of its own: the window's set is large and
// each access to it a cache miss, so a span costs one lookup and one add
// there).
type Window struct {
	mu       sync.Mutex
	keys     *keySet
	inFlight map[Key]uint32 // key → the push claiming it
	pushes   atomic.Uint32
}

// NewWindow is a window of the last size keys written; nil when size is 0
// (no deduplication).
func NewWindow(size int) *Window {
	if size <= 0 {
		return nil
	}
	return &Window{keys: newKeySet(size), inFlight: map[Key]uint32{}}
}

// NewPush returns an id for one push's claims.
func (w *Window) NewPush() uint32 {
	for {
		if id := w.pushes.Add(1); id != 0 {
			return id
		}
	}
}

// Claim fills out[i] for keys[i], claiming the new ones for push. A span
// without a span id cannot be told from another: it is always new.
func (w *Window) Claim(push uint32, keys []Key, out []Claim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys.touch(keys, 0) // Settle loads the oldest keys, which it removes
	for i, k := range keys {
		if unset(k) {
			out[i] = ClaimNew
			continue
		}
		if w.keys.has(k) {
			out[i] = ClaimWritten
			continue
		}
		switch owner, ok := w.inFlight[k]; {
		case !ok:
			w.inFlight[k] = push
			out[i] = ClaimNew
		case owner == push:
			out[i] = ClaimWritten // twice in this push
		default:
			out[i] = ClaimInFlight
		}
	}
}

// Settle ends push's claims: the keys of spans written become written, the
// others are released.
func (w *Window) Settle(push uint32, keys []Key, claims []Claim, written func(i int) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys.touch(keys, len(keys)) // the push's writes went through the caches since Claim
	for i, k := range keys {
		if claims[i] != ClaimNew || unset(k) {
			continue
		}
		if w.inFlight[k] != push {
			continue
		}
		delete(w.inFlight, k)
		if written(i) {
			w.keys.add(k) // claimed, so not in the window
		}
	}
}

// Remember adds keys written by an earlier run (read back at start).
func (w *Window) Remember(keys []Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		w.keys.add(k)
	}
}
