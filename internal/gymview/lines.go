// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxLineBytes bounds one JSON line the viewer parses. A capture line holds
// a whole model request and response (long prompts), so this is generous;
// a longer line is skipped and counted, never buffered whole.
const maxLineBytes = 64 << 20

// lineStats says what eachLine did.
type lineStats struct {
	consumed int64 // bytes up to and including the last '\n'
	lines    int   // complete lines passed to fn
	skipped  int   // complete lines longer than the limit
}

// eachLine calls fn with every complete line of r, without its '\n'. A last
// line with no '\n' is being written (or was torn by a crash): it is left
// for the next read, and not counted in consumed. The slice passed to fn is
// valid only during the call. An error of fn stops the read and is returned.
func eachLine(r io.Reader, maxLine int, fn func(line []byte) error) (lineStats, error) {
	var st lineStats
	br := bufio.NewReaderSize(r, 64<<10)
	var pos int64
	var long []byte // the start of a line longer than br's buffer
	over := false   // the current line is already longer than maxLine
	for {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			if !over && len(long)+len(chunk) <= maxLine {
				long = append(long, chunk...)
			} else {
				long, over = nil, true
			}
			continue
		}
		if errors.Is(err, io.EOF) {
			return st, nil // a last line without '\n' is not consumed
		}
		if err != nil {
			return st, err
		}
		st.consumed = pos
		line := chunk[:len(chunk)-1]
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if over || len(line) > maxLine {
			over = false
			st.skipped++
			continue
		}
		st.lines++
		if err := fn(line); err != nil {
			return st, err
		}
	}
}

// countLines counts the complete lines of r.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
