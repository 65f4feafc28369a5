// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

// WriteFunc is the writev(2) seam (at most IovMax buffers); tests replace
// it to inject ENOSPC and short writes for one file.
type WriteFunc func(name string, fd int, iovs [][]byte) (int, error)

// IovMax is IOV_MAX (Linux's and darwin's): a writev(2) takes at most these
// many buffers.
const IovMax = 1024

// MaxWriteBytes bounds the bytes of one write(2): group commit makes the
// combined file's append several megabytes as soon as a few pushes are
// written together, and one write(2) that large copies into the page cache
// slower than the same bytes in 1 MiB writes.
const MaxWriteBytes = 1 << 20

// writeChunks cuts an append's buffers into the chunks of successive
// write(2) calls: at most IovMax buffers and MaxWriteBytes bytes each, a
// longer buffer split across chunks. It does not modify data.
type writeChunks struct {
	data    [][]byte
	left    int      // the bytes of data not handed out yet
	off     int      // into data[0]
	scratch [][]byte // the chunk, when it is not a prefix of data
}

// next returns the next chunk and its size, or nil when data is done.
func (w *writeChunks) next() ([][]byte, int) {
	if len(w.data) == 0 {
		return nil, 0
	}
	// The common case: what is left fits one write as it is.
	if w.off == 0 && len(w.data) <= IovMax && w.left <= MaxWriteBytes {
		chunk, n := w.data, w.left
		w.data, w.left = nil, 0
		return chunk, n
	}
	w.scratch = w.scratch[:0]
	n := 0
	for len(w.data) > 0 && len(w.scratch) < IovMax && n < MaxWriteBytes {
		b := w.data[0][w.off:]
		if room := MaxWriteBytes - n; len(b) > room {
			b = b[:room]
			w.off += room
		} else {
			w.data, w.off = w.data[1:], 0
		}
		w.scratch = append(w.scratch, b)
		n += len(b)
	}
	w.left -= n
	return w.scratch, n
}
