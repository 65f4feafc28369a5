// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "crypto/sha256"

// hashID fills id with the first len(id) bytes of
// SHA-256(domain ‖ 0x00 ‖ parts...), and makes its last byte 1 when they
// are all zero: the ids the processor derives (rolloutTraceID,
// syntheticSpanID) are never the empty id.
func hashID(id []byte, domain string, parts ...[]byte) {
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
