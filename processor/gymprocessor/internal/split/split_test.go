// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// expectedTraceID computes T' of design §4.3 independently.
func expectedTraceID(k, rollout string) string {
	sum := sha256.Sum256([]byte("otelcol-gym/rollout/v1\x00" + k + "\x00" + rollout))
	return hex.EncodeToString(sum[:16])
}

func TestRolloutTraceIDKnownValues(t *testing.T) {
	// K is the run when there is one, else the original trace id in hex.
	id := TraceID("run-1", "12-3")
	assert.Equal(t, expectedTraceID("run-1", "12-3"), hex.EncodeToString(id[:]))
	orig := [16]byte{0xab, 1}
	origHex := hex.EncodeToString(orig[:])
	id = TraceID(Key("", orig), "0-0")
	assert.Equal(t, expectedTraceID(origHex, "0-0"), hex.EncodeToString(id[:]))
	assert.Equal(t, origHex, Key("", orig))
	assert.Equal(t, "run-1", Key("run-1", orig))
	// Different runs never share a rollout trace.
	assert.NotEqual(t, TraceID("run-1", "0-0"), TraceID("run-2", "0-0"))
	s := New(Config{MaxTrackedJobs: 1, MaxTrackedRoots: 1})
	assert.Equal(t, TraceID("run-1", "0-0"), s.TraceID("run-1", orig, "0-0"))
	assert.Equal(t, TraceID("run-1", "0-0"), s.TraceID("run-1", orig, "0-0"), "memoized")
	assert.Equal(t, TraceID(origHex, "0-0"), s.TraceID("", orig, "0-0"))
	assert.Equal(t, origHex, s.Hex(orig))
}

func TestDeriveIDIsNeverZero(t *testing.T) {
	var id [8]byte
	DeriveID(id[:], "d", []byte("x"))
	sum := sha256.Sum256([]byte("d\x00x"))
	assert.Equal(t, sum[:8], id[:])
	// A zero prefix is made non-zero in its last byte; the rule, on a
	// zero-length id (all of its no bytes are zero): nothing to set but no panic.
	var one [1]byte
	for i := 0; i < 1024; i++ {
		DeriveID(one[:], "d", []byte{byte(i), byte(i >> 8)})
		require.NotZero(t, one[0])
	}
}

func TestPreviousAttempt(t *testing.T) {
	for in, want := range map[string]string{
		"12-3-a1": "12-3",
		"12-3-a2": "12-3-a1",
		"0-0-a10": "0-0-a9",
	} {
		got, ok := PreviousAttempt(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"12-3", "12-3-a0", "a1", "x-a1", "12-3-a", "12-3-a01", "12-3-ax", "-3-a1"} {
		_, ok := PreviousAttempt(in)
		assert.False(t, ok, in)
	}
	assert.Equal(t, 0, AttemptIndex("12-3"))
	assert.Equal(t, 0, AttemptIndex("12-3-a0"))
	assert.Equal(t, 2, AttemptIndex("12-3-a2"))
}

func TestJobTableIsBoundedAndExpires(t *testing.T) {
	jt := newJobTable(2, 2, 100)
	ref := func(b byte) RootRef { return RootRef{Trace: [16]byte{b}, Span: [8]byte{b}} }
	a, b, c := [16]byte{'a'}, [16]byte{'b'}, [16]byte{'c'}
	for _, x := range []byte{5, 1, 9, 3} {
		jt.add(a, ref(x), 0)
	}
	e := jt.get(a)
	assert.Equal(t, 4, e.count)
	assert.Equal(t, []RootRef{ref(1), ref(3)}, e.roots, "the smallest T' are kept")
	jt.add(b, ref(1), 50)
	jt.add(c, ref(1), 60)
	assert.Equal(t, 2, jt.t.Len(), "bounded by max_tracked_jobs, oldest out")
	assert.Nil(t, jt.get(a))
	jt.expire(155)
	assert.Equal(t, 1, jt.t.Len())
	jt.expire(161)
	assert.Zero(t, jt.t.Len())
}

// A root is recorded for its job span when it is cut, and for a later
// attempt always; of several roots of one rollout the smallest span id is
// the one an attempt links to; an attempt whose previous root is unknown
// may not leave yet, and leaving without it after waiting is counted.
func TestRootsAndAttempts(t *testing.T) {
	s := New(Config{MaxJobLinks: 8, MaxTrackedJobs: 8, MaxTrackedRoots: 8, JobTTL: 100})
	job := [16]byte{'j'}
	assert.False(t, s.Root("run", job, [8]byte{9}, "12-3-a1", true, 0), "the previous attempt is not known yet")
	assert.True(t, s.Root("run", job, [8]byte{7}, "12-3", true, 0), "not an attempt")
	assert.True(t, s.Root("run", [16]byte{'o'}, [8]byte{5}, "12-3", false, 0), "a second root of 12-3, not cut")
	n, links := s.JobLinks(job)
	assert.Equal(t, 2, n, "the roots cut from the job trace")
	assert.Len(t, links, 2)
	ref, ok := s.PreviousRoot("run", job, "12-3-a1", false)
	require.True(t, ok)
	assert.Equal(t, RootRef{Trace: TraceID("run", "12-3"), Span: [8]byte{5}}, ref, "the smallest span id")
	_, ok = s.PreviousRoot("run", job, "12-3-a7", true)
	assert.False(t, ok)
	_, ok = s.PreviousRoot("run", job, "12-3", true)
	assert.False(t, ok, "not an attempt: no link, not missed")
	assert.Equal(t, Counts{LinksMissed: 1}, s.TakeCounts())
	assert.Equal(t, Counts{}, s.TakeCounts())
}

func TestEncodeRestore(t *testing.T) {
	s := New(Config{MaxJobLinks: 2, MaxTrackedJobs: 8, MaxTrackedRoots: 8, JobTTL: 100})
	for i := byte(0); i < 5; i++ {
		s.Root("run", [16]byte{i % 2}, [8]byte{i}, "1-"+string('0'+rune(i)), true, int64(i))
	}
	w := state.NewWriter(0)
	s.Encode(w)
	r := New(Config{MaxJobLinks: 2, MaxTrackedJobs: 8, MaxTrackedRoots: 8, JobTTL: 100})
	rd := state.NewReader(w.Bytes())
	r.Restore(rd)
	require.NoError(t, rd.Err())
	assert.Zero(t, rd.Left())
	w2 := state.NewWriter(0)
	r.Encode(w2)
	assert.Equal(t, w.Bytes(), w2.Bytes(), "the tables, in their order")
	for _, trace := range [][16]byte{{0}, {1}} {
		n1, l1 := s.JobLinks(trace)
		n2, l2 := r.JobLinks(trace)
		assert.Equal(t, n1, n2)
		assert.Equal(t, l1, l2)
	}
}
