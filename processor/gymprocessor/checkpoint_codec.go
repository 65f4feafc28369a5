// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"encoding/binary"
	"errors"
)

// stateWriter appends the checkpoint encoding: varints, length-prefixed
// strings from a table of distinct strings, raw ids.
type stateWriter struct {
	b       []byte
	strings map[string]uint64
}

func (w *stateWriter) u(v uint64)       { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) i(v int64)        { w.b = binary.AppendVarint(w.b, v) }
func (w *stateWriter) flag(v bool)      { w.b = append(w.b, boolByte(v)) }
func (w *stateWriter) trace(t [16]byte) { w.b = append(w.b, t[:]...) }
func (w *stateWriter) spanID(s [8]byte) { w.b = append(w.b, s[:]...) }
func (w *stateWriter) raw(p []byte)     { w.u(uint64(len(p))); w.b = append(w.b, p...) }
func (w *stateWriter) ref(i int, ok bool) { // an optional index: 0 for none
	if !ok {
		w.u(0)
		return
	}
	w.u(uint64(i) + 1)
}

// str writes s as its index in the string table, adding it the first time
// (index then string).
func (w *stateWriter) str(s string) {
	if id, ok := w.strings[s]; ok {
		w.u(id)
		return
	}
	id := uint64(len(w.strings)) + 1
	w.strings[s] = id
	w.u(0)
	w.raw([]byte(s))
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errTruncatedState = errors.New("checkpoint ends early")

// stateReader reads what stateWriter wrote; the first problem sticks in err.
type stateReader struct {
	b       []byte
	err     error
	strings []string
}

func (r *stateReader) u() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) i() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) fail() {
	if r.err == nil {
		r.err = errTruncatedState
	}
	r.b = nil
}

func (r *stateReader) take(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.fail()
		return make([]byte, n&0xffff)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *stateReader) flag() bool { return r.take(1)[0] == 1 }

func (r *stateReader) trace() (t [16]byte) { copy(t[:], r.take(16)); return t }

func (r *stateReader) spanID() (s [8]byte) { copy(s[:], r.take(8)); return s }

func (r *stateReader) raw() []byte {
	n := r.u()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	return r.take(int(n))
}

func (r *stateReader) str() string {
	id := r.u()
	if id == 0 {
		s := string(r.raw())
		r.strings = append(r.strings, s)
		return s
	}
	if id > uint64(len(r.strings)) {
		r.fail()
		return ""
	}
	return r.strings[id-1]
}

// ref reads an optional index below n: -1 for none.
func (r *stateReader) ref(n int) int {
	v := r.u()
	if v == 0 {
		return -1
	}
	if v > uint64(n) {
		r.fail()
		return -1
	}
	return int(v - 1)
}

// count reads a list length, bounded by what is left to read.
func (r *stateReader) count() int {
	n := r.u()
	if n > uint64(len(r.b))+1 {
		r.fail()
		return 0
	}
	return int(n)
}

// index reads a plain index below n.
func (r *stateReader) index(n int) int {
	v := r.u()
	if v >= uint64(n) {
		r.fail()
		return 0
	}
	return int(v)
}
