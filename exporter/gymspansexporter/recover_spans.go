// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// Recovery of a P extent (combined_spans rest, journal_spans.go): its spans
// are a blob in the dead index's data file, not lines of the combined file.
// A blob whose CRC fails (a data file cut by a power loss) is not taken. Its
// keys refill the dedup window all the same, as do those of a blob whose data
// file was removed once its spans were in their files.

import (
	"hash/crc32"

	"go.uber.org/zap"
)

// dataReader reads the data files of a dead index, each once.
type dataReader struct {
	dirFD int
	id    string
	n     uint64
	data  []byte
	ok    bool
	read  bool
}

// blob returns the bytes of x's blob, or false when they are gone or damaged.
func (r *dataReader) blob(x extent) ([]byte, bool) {
	if !r.read || r.n != x.dataN {
		r.n, r.read = x.dataN, true
		data, err := readFileAt(r.dirFD, dataName(r.id, x.dataN))
		r.data, r.ok = data, err == nil
	}
	if !r.ok || x.off > int64(len(r.data)) || x.blobLen > int64(len(r.data))-x.off {
		return nil, false
	}
	b := r.data[x.off : x.off+x.blobLen]
	return b, crc32.Checksum(b, castagnoli) == x.blobCRC
}

// readSpansExtent takes what recovery needs of a P extent.
func (rec *recoverer) readSpansExtent(rc *recovered, x extent, done, smFrom uint64) {
	rc.keys = append(rc.keys, x.keys...)
	if x.seq < done && x.seq < smFrom {
		return
	}
	blob, ok := rc.data.blob(x)
	if !ok {
		rc.missing += max(len(x.keys), 1)
		return
	}
	batches, err := decodeBlob(blob)
	if err != nil {
		rec.logs.warn("recover_decode", "the journal's span data could not be read back", zap.Error(err))
		return
	}
	for _, bb := range batches {
		rc.lines++
		rec.takeLine(rc, x, nil, bb.td, bb.wrote, done, smFrom)
	}
}
