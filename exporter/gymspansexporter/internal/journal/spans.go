// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package journal // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"

// The journal's span data (combined_spans: rest). The combined file then
// holds only the spans that are in no rollout file, so it cannot be the
// journal: a group's spans are written, as OTLP protobuf, to the data file
// of the index's current segment before ConsumeTraces returns, and the
// segment's P record names them:
//
//	<id>-<n>.spans     the data of segment n: one blob per group, back to back
//
// A blob is, per batch of the group, [u32 length][ExportTraceServiceRequest
// protobuf of the pushed batch][u32 span count][bitmap: the spans this push
// wrote], so the pushed batch is marshalled as it came, not copied. Its P
// record (sequence number, segment, offset, length and CRC-32C of the blob,
// the dedup keys, the group's rollouts.jsonl lines) is written after it:
// a P record that can be read names a blob that was written whole. When the
// combined file's append of the group then fails, an X record cancels it
// (the pushes fail and their senders retry). A data file is removed once
// every extent in its segment is done and in the service map; its segment
// stays while the dedup window needs its keys.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"
)

// dataFile is the current segment's data file.
type dataFile struct {
	n   uint64
	fd  int
	off int64
}

func dataName(id string, n uint64) string {
	return fmt.Sprintf("%s-%010d.spans", id, n)
}

// createData creates the data file of segment n.
func (j *Index) createData(n uint64) (dataFile, error) {
	name := dataName(j.id, n)
	fd, err := unix.Openat(j.dirFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, j.filePerm)
	if err != nil {
		return dataFile{fd: -1}, fmt.Errorf("create %s/%s: %w", Dir, name, err)
	}
	return dataFile{n: n, fd: fd}, nil
}

// SpansBlob is a group's blob, assembled as iovecs of the batches'
// protobuf and masks (no copy of the protobuf). The group writer keeps one
// as scratch: Add each batch, AddSpans, Reset.
type SpansBlob struct {
	parts []blobPart
	meta  []byte // every batch's length prefix, count and mask, one arena
	iovs  [][]byte
	size  int
	crc   uint32
}

// blobPart is one batch of a blob: meta[head:head+4] is its length prefix,
// then proto, then meta[head+4:end] its span count and mask.
type blobPart struct {
	head, end int
	proto     []byte
}

// Reset empties the blob, keeping its memory.
func (sb *SpansBlob) Reset() {
	clear(sb.parts)
	clear(sb.iovs)
	sb.parts, sb.meta, sb.iovs, sb.size, sb.crc = sb.parts[:0], sb.meta[:0], sb.iovs[:0], 0, 0
}

// Add appends one batch: its protobuf and which of its spans it wrote
// (wrote(i) for its i-th span in order).
func (sb *SpansBlob) Add(proto []byte, spans int, wrote func(i int) bool) {
	head := len(sb.meta)
	sb.meta = binary.LittleEndian.AppendUint32(sb.meta, uint32(len(proto)))
	sb.meta = binary.LittleEndian.AppendUint32(sb.meta, uint32(spans))
	for i := 0; i < spans; i += 8 {
		var bits byte
		for k := 0; k < 8 && i+k < spans; k++ {
			if wrote(i + k) {
				bits |= 1 << k
			}
		}
		sb.meta = append(sb.meta, bits)
	}
	sb.parts = append(sb.parts, blobPart{head: head, end: len(sb.meta), proto: proto})
}

// seal builds the iovecs and the CRC-32C of the blob.
func (sb *SpansBlob) seal() {
	sb.iovs, sb.size, sb.crc = sb.iovs[:0], 0, 0
	for _, p := range sb.parts {
		for _, b := range [][]byte{sb.meta[p.head : p.head+4], p.proto, sb.meta[p.head+4 : p.end]} {
			sb.iovs = append(sb.iovs, b)
			sb.size += len(b)
			sb.crc = crc32.Update(sb.crc, castagnoli, b)
		}
	}
}

// BlobBatch is one batch of a blob read back: its spans in order, and which
// of them its push wrote.
type BlobBatch struct {
	Traces ptrace.Traces
	Wrote  []bool
}

var errTornBlob = errors.New("torn or corrupt span data")

// DecodeBlob reads a blob back. Damaged data gives an error, never a panic.
func DecodeBlob(data []byte) ([]BlobBatch, error) {
	var out []BlobBatch
	var um ptrace.ProtoUnmarshaler
	r := reader{p: data}
	for len(r.p) > 0 {
		proto := r.bytes()
		spans := int(r.u32())
		mask := r.take((spans + 7) / 8)
		if !r.ok() || spans < 0 {
			return nil, errTornBlob
		}
		td, err := um.UnmarshalTraces(proto)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errTornBlob, err)
		}
		if td.SpanCount() != spans {
			return nil, fmt.Errorf("%w: %d spans, mask of %d", errTornBlob, td.SpanCount(), spans)
		}
		bb := BlobBatch{Traces: td, Wrote: make([]bool, spans)}
		for i := range bb.Wrote {
			bb.Wrote[i] = mask[i/8]&(1<<(i%8)) != 0
		}
		out = append(out, bb)
	}
	return out, nil
}

// AddSpans writes a group's blob to the current data file, then its P
// record (payload from AppendSpansHeader and the rest), and returns the
// group's sequence number.
func (j *Index) AddSpans(sb *SpansBlob, payload []byte, keys int) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	sb.seal()
	n, err := pwritev(j.data.fd, sb.iovs, j.data.off)
	if err == nil && n != sb.size {
		err = fmt.Errorf("short write (%d of %d bytes)", n, sb.size)
	}
	if err != nil {
		_ = unix.Ftruncate(j.data.fd, j.data.off)
		return 0, fmt.Errorf("write %s/%s: %w", Dir, dataName(j.id, j.data.n), err)
	}
	binary.LittleEndian.PutUint64(payload[9:], j.data.n)
	binary.LittleEndian.PutUint64(payload[17:], uint64(j.data.off))
	binary.LittleEndian.PutUint64(payload[25:], uint64(sb.size))
	binary.LittleEndian.PutUint32(payload[33:], sb.crc)
	seq, err := j.recordGroup(payload, keys)
	if err != nil {
		_ = unix.Ftruncate(j.data.fd, j.data.off)
		return 0, err
	}
	j.data.off += int64(sb.size)
	return seq, nil
}

// Cancel records that the group of seq was not written (its pushes fail).
func (j *Index) Cancel(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.writeRecord(&j.seg, binary.LittleEndian.AppendUint64([]byte{recCancel}, seq))
}

// AppendSpansHeader starts a P record; AddSpans fills in the sequence
// number and where the blob is. Then: AppendCount and the keys, then
// AppendRoots (as for an extent).
func AppendSpansHeader(p []byte) []byte {
	p = append(p[:0], recSpans)
	return append(p, make([]byte, 8+8+8+8+4)...)
}

// blobReader reads the data files of a dead index, each once.
type blobReader struct {
	n    uint64
	data []byte
	ok   bool
	read bool
}

// Blob returns the bytes of a P extent's blob (Extent.Spans), or false when
// they are gone (the data file was removed once its spans were in their
// files) or damaged (a data file cut by a power loss).
func (d *Dead) Blob(x Extent) ([]byte, bool) {
	r := &d.blobs
	if !r.read || r.n != x.dataN {
		r.n, r.read = x.dataN, true
		data, err := readFileAt(d.dirFD, dataName(d.ID, x.dataN))
		r.data, r.ok = data, err == nil
	}
	if !r.ok || x.Off > int64(len(r.data)) || x.blobLen > int64(len(r.data))-x.Off {
		return nil, false
	}
	b := r.data[x.Off : x.Off+x.blobLen]
	return b, crc32.Checksum(b, castagnoli) == x.blobCRC
}
