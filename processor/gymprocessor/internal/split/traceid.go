// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import (
	"crypto/sha256"
	"encoding/hex"
)

// rolloutTraceDomain is T”s hash domain.
const rolloutTraceDomain = "otelcol-gym/rollout/v1"

// TraceID is T' of design §4.3: the first 16 bytes of
// SHA-256("otelcol-gym/rollout/v1" ‖ 0x00 ‖ K ‖ 0x00 ‖ R), never all zero,
// where k is K (Key).
func TraceID(k, rollout string) [16]byte {
	var id [16]byte
	DeriveID(id[:], rolloutTraceDomain, []byte(k), []byte{0}, []byte(rollout))
	return id
}

// Key returns K: the run when the span has one, else the 32 lowercase hex
// digits of its original trace id.
func Key(run string, orig [16]byte) string {
	if run != "" {
		return run
	}
	return hex.EncodeToString(orig[:])
}

// DeriveID fills id with the first len(id) bytes of
// SHA-256(domain ‖ 0x00 ‖ parts...), and makes its last byte 1 when they
// are all zero: the ids the processor derives (T', the span id of a
// synthesized span) are never the empty id.
func DeriveID(id []byte, domain string, parts ...[]byte) {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	copy(id, sum[:])
	for _, c := range id {
		if c != 0 {
			return
		}
	}
	id[len(id)-1] = 1
}
