// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// writeChunks hands out every byte once, in order, in chunks of at most
// IovMax buffers and MaxWriteBytes bytes, and leaves the caller's buffers
// as they were.
func TestWriteChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes := rapid.SliceOfN(rapid.OneOf(
			rapid.IntRange(0, 200),
			rapid.IntRange(MaxWriteBytes-2, MaxWriteBytes+2),
			rapid.IntRange(2*MaxWriteBytes, 3*MaxWriteBytes+7),
		), 0, 12).Draw(t, "sizes")
		if rapid.Bool().Draw(t, "many") {
			for i := 0; i < IovMax+rapid.IntRange(1, 50).Draw(t, "more"); i++ {
				sizes = append(sizes, i%7)
			}
		}
		var data [][]byte
		var want []byte
		for i, n := range sizes {
			b := bytes.Repeat([]byte{byte('a' + i%26)}, n)
			data = append(data, b)
			want = append(want, b...)
		}
		before := append([][]byte(nil), data...)
		var got []byte
		w := writeChunks{data: data, left: len(want)}
		for {
			chunk, n := w.next()
			if chunk == nil {
				break
			}
			if len(chunk) > IovMax {
				t.Fatalf("%d buffers in one write", len(chunk))
			}
			sum := 0
			for _, b := range chunk {
				sum += len(b)
				got = append(got, b...)
			}
			if sum != n || n > MaxWriteBytes {
				t.Fatalf("chunk of %d bytes reported as %d (bound %d)", sum, n, MaxWriteBytes)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("chunks hold %d bytes, want %d (or differ)", len(got), len(want))
		}
		for i := range data {
			if len(data[i]) != len(before[i]) || (len(data[i]) > 0 && &data[i][0] != &before[i][0]) {
				t.Fatalf("buffer %d changed", i)
			}
		}
	})
}
