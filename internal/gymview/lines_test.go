// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the reader's 64 KiB buffer
	for _, tc := range []struct {
		name     string
		in       string
		max      int
		want     []string
		consumed int
		skipped  int
	}{
		{name: "empty", in: "", max: 10},
		{name: "complete lines", in: "a\nbb\n", max: 10, want: []string{"a", "bb"}, consumed: 5},
		{name: "torn last line is left", in: "a\nbb", max: 10, want: []string{"a"}, consumed: 2},
		{name: "only a torn line", in: "abc", max: 10},
		{name: "empty lines pass", in: "\n\na\n", max: 10, want: []string{"", "", "a"}, consumed: 4},
		{name: "too long is skipped", in: "a\n" + "xxxxxxxxxxx\n" + "b\n", max: 10, want: []string{"a", "b"}, consumed: 16, skipped: 1},
		{name: "longer than the buffer", in: long + "\nb\n", max: 200 << 10, want: []string{long, "b"}, consumed: len(long) + 3},
		{name: "longer than the buffer and the limit", in: long + "\nb\n", max: 70 << 10, want: []string{"b"}, consumed: len(long) + 3, skipped: 1},
		{name: "torn long line is left", in: "a\n" + long, max: 200 << 10, want: []string{"a"}, consumed: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			st, err := eachLine(strings.NewReader(tc.in), tc.max, func(l []byte) error {
				got = append(got, string(l))
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.EqualValues(t, tc.consumed, st.consumed, "consumed")
			assert.Equal(t, tc.skipped, st.skipped, "skipped")
			assert.Equal(t, len(tc.want), st.lines, "lines")
		})
	}
}

func TestEachLineStops(t *testing.T) {
	n := 0
	st, err := eachLine(strings.NewReader("a\nb\nc\n"), 10, func([]byte) error {
		n++
		if n == 2 {
			return errStop
		}
		return nil
	})
	require.True(t, errors.Is(err, errStop))
	assert.Equal(t, 2, n)
	assert.EqualValues(t, 4, st.consumed)
}

// TestEachLineResumes: reading a growing file from the last consumed offset
// sees every line once, wherever the writes were cut.
func TestEachLineResumes(t *testing.T) {
	full := "one\ntwo\nthree\nfour\n"
	for cut := 0; cut <= len(full); cut++ {
		var got []string
		fn := func(l []byte) error { got = append(got, string(l)); return nil }
		st, err := eachLine(strings.NewReader(full[:cut]), 100, fn)
		require.NoError(t, err)
		_, err = eachLine(strings.NewReader(full[st.consumed:]), 100, fn)
		require.NoError(t, err)
		assert.Equal(t, []string{"one", "two", "three", "four"}, got, "cut at %d", cut)
	}
}

func TestCountLines(t *testing.T) {
	n, err := countLines(strings.NewReader(strings.Repeat("ab\n", 100000) + "torn"))
	require.NoError(t, err)
	assert.Equal(t, 100000, n)
}
