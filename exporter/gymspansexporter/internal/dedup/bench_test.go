// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package dedup

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// BenchmarkWindow: a push of 512 new spans claimed and settled (written) in
// a window of the exporter's default size (dedup_window_spans, 2^19) that
// is already full, per span (new keys drawn included): the exporter's
// steady state.
func BenchmarkWindow(b *testing.B) {
	const size, push = 1 << 19, 512
	w := NewWindow(size)
	rng := rand.New(rand.NewPCG(1, 2))
	next := func() Key {
		var k Key
		binary.LittleEndian.PutUint64(k[:8], rng.Uint64()|1)
		binary.LittleEndian.PutUint64(k[8:], rng.Uint64())
		return k
	}
	keys, claims := make([]Key, push), make([]Claim, push)
	written := func(int) bool { return true }
	fill := func() {
		for i := range keys {
			keys[i] = next()
		}
		id := w.NewPush()
		w.Claim(id, keys, claims)
		w.Settle(id, keys, claims, written)
	}
	for range size / push {
		fill()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += push {
		fill()
	}
}
