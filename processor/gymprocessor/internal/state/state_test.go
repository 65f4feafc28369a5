// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package state

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	w := NewWriter(0)
	w.U(300)
	w.I(-7)
	w.Flag(true)
	w.Trace([16]byte{1, 2})
	w.Span([8]byte{3})
	w.Str("run-1")
	w.Str("")
	w.Str("run-1")
	w.Raw([]byte{9, 9})
	w.Ref(0, false)
	w.Ref(4, true)
	r := NewReader(w.Bytes())
	assert.Equal(t, uint64(300), r.U())
	assert.Equal(t, int64(-7), r.I())
	assert.True(t, r.Flag())
	assert.Equal(t, [16]byte{1, 2}, r.Trace())
	assert.Equal(t, [8]byte{3}, r.Span())
	assert.Equal(t, "run-1", r.Str())
	assert.Equal(t, "", r.Str())
	assert.Equal(t, "run-1", r.Str(), "the second time by its index")
	assert.Equal(t, []byte{9, 9}, r.Raw())
	assert.Equal(t, -1, r.Ref(10))
	assert.Equal(t, 4, r.Ref(10))
	require.NoError(t, r.Err())
	assert.Zero(t, r.Left())
}

// Every cut of an encoding reads to an error, never a panic, and the error
// sticks.
func TestTruncatedIsAnError(t *testing.T) {
	w := NewWriter(0)
	w.Str("a string")
	w.Trace([16]byte{7})
	w.U(1 << 40)
	b := w.Bytes()
	for n := range len(b) {
		r := NewReader(b[:n])
		_ = r.Str()
		_ = r.Trace()
		_ = r.U()
		assert.ErrorIs(t, r.Err(), ErrTruncated, "cut at %d", n)
		assert.Zero(t, r.U(), "after the error, zero values")
	}
}

func TestIndexesAreBounded(t *testing.T) {
	w := NewWriter(0)
	w.U(5)
	w.U(6)
	w.U(1 << 20)
	r := NewReader(w.Bytes())
	assert.Equal(t, 0, r.Index(5), "5 is not below 5")
	require.Error(t, r.Err())
	r = NewReader(w.Bytes()[1:])
	assert.Equal(t, -1, r.Ref(5), "ref 6 is index 5, not below 5")
	require.Error(t, r.Err())
	r = NewReader(w.Bytes()[2:])
	assert.Zero(t, r.Count(), "a count longer than what is left")
	require.Error(t, r.Err())
}
