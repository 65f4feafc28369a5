// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"fmt"
	"io"
	"time"
)

// How often progress is shown: on a terminal one line redrawn in place,
// elsewhere (a log, a CI job) one line now and then.
const (
	terminalEvery = 200 * time.Millisecond
	plainEvery    = 10 * time.Second
)

// progress shows how far a replay has got: spans, rollouts, rate and the
// time left, estimated from the bytes read of all the input's bytes.
type progress struct {
	w        io.Writer
	terminal bool
	total    int64 // bytes of input
	now      func() time.Time
	start    time.Time
	shown    time.Time
	drawn    bool // a terminal line is on screen
}

func newProgress(w io.Writer, terminal bool, total int64, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, terminal: terminal, total: total, now: now, start: t, shown: t}
}

// update shows the state when it is time to.
func (p *progress) update(read, spans, rollouts int64) {
	t := p.now()
	every := plainEvery
	if p.terminal {
		every = terminalEvery
	}
	if t.Sub(p.shown) < every {
		return
	}
	p.shown = t
	line := p.line(read, spans, rollouts, t)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "otelcol-gym replay: %s\n", line)
}

// done clears the terminal line before the summary.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *progress) line(read, spans, rollouts int64, t time.Time) string {
	elapsed := t.Sub(p.start)
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(read) / float64(p.total)
	}
	s := fmt.Sprintf("%5.1f%%  %d spans  %d rollouts  %s spans/s", pct, spans, rollouts, rate(spans, elapsed))
	if read > 0 && read < p.total {
		left := time.Duration(float64(elapsed) * float64(p.total-read) / float64(read))
		s += "  ETA " + left.Round(time.Second).String()
	}
	return s
}

func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(n)/d.Seconds())
}
