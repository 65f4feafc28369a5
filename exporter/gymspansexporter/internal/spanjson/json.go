// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"

// The JSON primitives of both line encoders (console.go, otlpjson.go; design
// §5.2). Both append to a caller-owned []byte and allocate nothing per span
// once that buffer has grown.

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Bytes that are not valid
// UTF-8 are replaced with U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainASCII8(load8(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// load8 reads s[i:i+8] as a little-endian word (the compiler makes it one
// load).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plainASCII8 reports whether each of the 8 bytes of w is printable ASCII
// other than '"' and '\\', i.e. is copied into a JSON string as it is. The
// tests are the classic word-at-a-time ones: (x - 0x01..) & ^x & 0x80..
// is non-zero exactly when some byte of x is zero, and (w - n*0x01..) & ^w
// & 0x80.. when some byte of w is below n (n <= 0x80).
func plainASCII8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (w - 0x20*ones) & ^w
	q := w ^ ('"' * ones)
	q = (q - ones) & ^q
	bs := w ^ ('\\' * ones)
	bs = (bs - ones) & ^bs
	return (ctl|q|bs|w)&highs == 0
}

// appendJSONDouble writes f as encoding/json does, and a NaN or ±Inf, which
// JSON has no number for, as the string "NaN", "Infinity" or "-Infinity"
// (the proto3 JSON convention).
func appendJSONDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return appendFloat(b, f)
}

// appendFloat formats a finite f as encoding/json does: the shortest
// representation, in exponent form only for very small or large values.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
