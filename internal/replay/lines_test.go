// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLineReader: lines with their numbers; CRLF; a line over the bound is
// read past whole and says so; the last line without a newline says so.
func TestLineReader(t *testing.T) {
	in := "one\r\n" + strings.Repeat("x", 100) + "\n\nfour"
	lr := newLineReader(strings.NewReader(in), 10)
	var got []line
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		l.text = append([]byte(nil), l.text...)
		got = append(got, l)
	}
	assert.Equal(t, []line{
		{text: []byte("one"), number: 1, newline: true},
		{number: 2, newline: true, tooLong: true},
		{number: 3, newline: true}, // empty
		{text: []byte("four"), number: 4},
	}, got)
	assert.Equal(t, int64(len(in)), lr.read)
}
