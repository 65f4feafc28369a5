// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeNow is a clock a test moves.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// TestProgressOnATerminal: one line redrawn in place, with spans,
// rollouts, rate and the time left, cleared before the summary.
func TestProgressOnATerminal(t *testing.T) {
	clk := &fakeNow{t: time.Unix(0, 0)}
	var w bytes.Buffer
	p := newProgress(&w, true, 1000, clk.now)
	p.update(100, 50, 1) // too soon: nothing
	assert.Empty(t, w.String())
	clk.t = clk.t.Add(time.Second)
	p.update(250, 500, 10)
	assert.Equal(t, "\r\x1b[K 25.0%  500 spans  10 rollouts  500 spans/s  ETA 3s", w.String())
	clk.t = clk.t.Add(time.Second)
	p.update(1000, 2000, 40)
	assert.True(t, strings.HasSuffix(w.String(), "\r\x1b[K100.0%  2000 spans  40 rollouts  1000 spans/s"), w.String())
	p.done()
	assert.True(t, strings.HasSuffix(w.String(), "2000 spans/s\r\x1b[K") || strings.HasSuffix(w.String(), "1000 spans/s\r\x1b[K"), w.String())
	assert.NotContains(t, w.String(), "\n")
}

// TestProgressInALog: plain lines, one every plainEvery, nothing to clear.
func TestProgressInALog(t *testing.T) {
	clk := &fakeNow{t: time.Unix(0, 0)}
	var w bytes.Buffer
	p := newProgress(&w, false, 1000, clk.now)
	clk.t = clk.t.Add(time.Second)
	p.update(250, 500, 10)
	assert.Empty(t, w.String())
	clk.t = clk.t.Add(plainEvery)
	p.update(500, 1100, 20)
	assert.Equal(t, "otelcol-gym replay:  50.0%  1100 spans  20 rollouts  100 spans/s  ETA 11s\n", w.String())
	p.done()
	assert.Equal(t, 1, strings.Count(w.String(), "\n"))
	assert.NotContains(t, w.String(), "\x1b")
}
