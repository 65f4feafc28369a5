// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import "encoding/hex"

// What the split only caches (no checkpoint holds it): T' per (K, rollout)
// and the hex of original trace ids. Each is cleared whole when it grows
// past its bound.
const (
	maxTraceIDs = 1 << 16
	maxHexes    = 1 << 14
)

// traceIDs memoizes T'.
type traceIDs struct {
	m map[rootKey][16]byte

	// The last answer: spans of one rollout come in runs.
	last    rootKey
	lastID  [16]byte
	hasLast bool
}

func (c *traceIDs) get(k, rollout string) [16]byte {
	if c.hasLast && c.last.rollout == rollout && c.last.k == k {
		return c.lastID
	}
	key := rootKey{k, rollout}
	id, ok := c.m[key]
	if !ok {
		if len(c.m) >= maxTraceIDs {
			clear(c.m)
		}
		id = TraceID(k, rollout)
		c.m[key] = id
	}
	c.last, c.lastID, c.hasLast = key, id, true
	return id
}

// hexes memoizes the hex of original trace ids: every span of a job trace
// shares one, and the spans of one trace come in runs.
type hexes struct {
	m       map[[16]byte]string
	last    [16]byte
	lastHex string
}

func (h *hexes) of(id [16]byte) string {
	if h.lastHex != "" && h.last == id {
		return h.lastHex
	}
	s, ok := h.m[id]
	if !ok {
		if len(h.m) >= maxHexes {
			clear(h.m)
		}
		s = hex.EncodeToString(id[:])
		h.m[id] = s
	}
	h.last, h.lastHex = id, s
	return s
}
