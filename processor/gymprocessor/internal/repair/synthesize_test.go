// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
)

// expectedSyntheticSpanID computes the span id design §4.4 gives the CLIENT
// span synthesized above SERVER span s in trace t, independently: the first
// 8 bytes of SHA-256("otelcol-gym/synthetic/v1" ‖ 0x00 ‖ t ‖ s), the last
// byte set to 1 if all are zero.
func expectedSyntheticSpanID(t [16]byte, s [8]byte) [8]byte {
	buf := append([]byte("otelcol-gym/synthetic/v1\x00"), t[:]...)
	buf = append(buf, s[:]...)
	sum := sha256.Sum256(buf)
	var id [8]byte
	copy(id[:], sum[:8])
	if id == [8]byte{} {
		id[7] = 1
	}
	return id
}

func TestSyntheticSpanIDZeroGuardAndFormula(t *testing.T) {
	for i := 0; i < 64; i++ {
		tid := [16]byte{byte(i), 'a'}
		sid := [8]byte{'a', byte(i)}
		assert.Equal(t, expectedSyntheticSpanID(tid, sid), SyntheticSpanID(tid, sid))
	}
}
