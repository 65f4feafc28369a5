// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bufio"
	"errors"
	"io"
)

// maxLineBytes bounds one line of input, and a console span's multi-line
// object: a longer one is skipped whole (never held), so memory stays
// bounded whatever the input. The file exporter writes one batch a line;
// the SDK's batches of 512 spans stay well below it.
const maxLineBytes = 64 << 20

// line is one line of input: its bytes without the newline (valid until the
// next call), its number (from 1), whether it ended with a newline (a torn
// last line did not), and whether it was longer than the bound (then text
// is empty: the line was read past, not kept).
type line struct {
	text    []byte
	number  int
	newline bool
	tooLong bool
}

// lineReader reads lines of at most max bytes through a bufio.Reader,
// counting the bytes it consumed (for progress).
type lineReader struct {
	r      *bufio.Reader
	max    int
	buf    []byte
	number int
	read   int64
}

func newLineReader(r io.Reader, maxBytes int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: maxBytes}
}

// next returns the next line; io.EOF once there is none.
func (lr *lineReader) next() (line, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.read += int64(len(chunk))
		if !tooLong && len(lr.buf)+len(chunk) > lr.max+1 {
			tooLong, lr.buf = true, lr.buf[:0]
		}
		if !tooLong {
			lr.buf = append(lr.buf, chunk...)
		}
		switch {
		case err == nil:
			lr.number++
			return lr.line(true, tooLong), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(chunk) == 0 && len(lr.buf) == 0 && !tooLong {
				return line{}, io.EOF
			}
			lr.number++
			return lr.line(false, tooLong), nil
		default:
			return line{}, err
		}
	}
}

func (lr *lineReader) line(newline, tooLong bool) line {
	if tooLong {
		return line{number: lr.number, newline: newline, tooLong: true}
	}
	text := lr.buf
	if newline {
		text = text[:len(text)-1]
	}
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	return line{text: text, number: lr.number, newline: newline}
}
