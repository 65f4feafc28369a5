// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package state is the encoding the gym processor's checkpoint is written
// in (design §4.6): varints, ids, and strings from a table of distinct
// strings. Each part of the processor (the rollout core, the split, the
// service-map repair, the held spans) writes and reads its own state with
// it; the checkpoint (checkpoint.go of the processor) orders the parts.
package state // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"

import (
	"encoding/binary"
	"errors"
)

// Writer appends the encoding: varints, length-prefixed strings from a
// table of distinct strings, raw ids.
type Writer struct {
	b       []byte
	strings map[string]uint64
}

// NewWriter returns a writer with room for about n bytes.
func NewWriter(n int) *Writer {
	return &Writer{b: make([]byte, 0, n), strings: make(map[string]uint64, n/512)}
}

// Bytes is what was written.
func (w *Writer) Bytes() []byte { return w.b }

func (w *Writer) U(v uint64)       { w.b = binary.AppendUvarint(w.b, v) }
func (w *Writer) I(v int64)        { w.b = binary.AppendVarint(w.b, v) }
func (w *Writer) Flag(v bool)      { w.b = append(w.b, boolByte(v)) }
func (w *Writer) Trace(t [16]byte) { w.b = append(w.b, t[:]...) }
func (w *Writer) Span(s [8]byte)   { w.b = append(w.b, s[:]...) }
func (w *Writer) Raw(p []byte)     { w.U(uint64(len(p))); w.b = append(w.b, p...) }

// Ref writes an optional index: 0 for none.
func (w *Writer) Ref(i int, ok bool) {
	if !ok {
		w.U(0)
		return
	}
	w.U(uint64(i) + 1)
}

// Str writes s as its index in the string table, adding it the first time
// (index then string).
func (w *Writer) Str(s string) {
	if id, ok := w.strings[s]; ok {
		w.U(id)
		return
	}
	id := uint64(len(w.strings)) + 1
	w.strings[s] = id
	w.U(0)
	w.Raw([]byte(s))
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// ErrTruncated is the error of a reader that ran out of bytes.
var ErrTruncated = errors.New("checkpoint ends early")

// Reader reads what Writer wrote; the first problem sticks in Err, and
// every read after it returns zero values.
type Reader struct {
	b       []byte
	err     error
	strings []string
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first problem met, or nil.
func (r *Reader) Err() error { return r.err }

// Left is the number of bytes not yet read.
func (r *Reader) Left() int { return len(r.b) }

// Fail records err as the reader's problem (a part's own check of what it
// read), unless it has one.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *Reader) U() uint64 { return varint(r, binary.Uvarint) }

func (r *Reader) I() int64 { return varint(r, binary.Varint) }

// varint reads a varint with decode (binary.Uvarint or binary.Varint).
func varint[T uint64 | int64](r *Reader, decode func([]byte) (T, int)) T {
	v, n := decode(r.b)
	if n <= 0 {
		r.Fail(ErrTruncated)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *Reader) take(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.Fail(ErrTruncated)
		return make([]byte, n&0xffff)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *Reader) Flag() bool { return r.take(1)[0] == 1 }

func (r *Reader) Trace() (t [16]byte) { copy(t[:], r.take(16)); return t }

func (r *Reader) Span() (s [8]byte) { copy(s[:], r.take(8)); return s }

func (r *Reader) Raw() []byte {
	n := r.U()
	if n > uint64(len(r.b)) {
		r.Fail(ErrTruncated)
		return nil
	}
	return r.take(int(n))
}

func (r *Reader) Str() string {
	id := r.U()
	if id == 0 {
		s := string(r.Raw())
		r.strings = append(r.strings, s)
		return s
	}
	if id > uint64(len(r.strings)) {
		r.Fail(ErrTruncated)
		return ""
	}
	return r.strings[id-1]
}

// Ref reads an optional index below n: -1 for none.
func (r *Reader) Ref(n int) int {
	v := r.U()
	if v == 0 {
		return -1
	}
	if v > uint64(n) {
		r.Fail(ErrTruncated)
		return -1
	}
	return int(v - 1)
}

// Count reads a list length, bounded by what is left to read.
func (r *Reader) Count() int {
	n := r.U()
	if n > uint64(len(r.b))+1 {
		r.Fail(ErrTruncated)
		return 0
	}
	return int(n)
}

// Index reads a plain index below n.
func (r *Reader) Index(n int) int {
	v := r.U()
	if v >= uint64(n) {
		r.Fail(ErrTruncated)
		return 0
	}
	return int(v)
}
