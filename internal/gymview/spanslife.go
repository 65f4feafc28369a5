// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"io"
)

// spansLife is a rollout in flight's last signs of life: the latest end of
// a span in its spans file, found by a scan for the end-time key (no line is
// decoded: every span of every rollout passes here once while the rollout
// runs), and its capture file's mtime (Gym appends a capture line when a
// model call completes).
type spansLife struct {
	size, offset int64
	maxEnd       int64 // unix ns
	captureMtime int64 // unix ns; 0 without a capture file
	captureSize  int64
}

// update reads what the spans file gained and the capture file's mtime.
func (s *spansLife) update(d *captureDir, id string, budget *readBudget) {
	if c, ok := rolloutFile(id, captureSuffix); ok {
		if mtime, size, err := d.stat(c); err == nil {
			s.captureMtime, s.captureSize = mtime, size
		}
	}
	name, _ := rolloutFile(id, spansSuffix)
	_, size, err := d.stat(name)
	if err != nil || size == s.size {
		return
	}
	f, st, err := d.open(name)
	if err != nil {
		return
	}
	defer f.Close()
	if st.Size() < s.offset {
		s.offset, s.maxEnd = 0, 0
	}
	s.size = st.Size()
	stats, _ := eachLine(io.NewSectionReader(f, s.offset, s.size-s.offset), maxLineBytes, func(line []byte) error {
		s.maxEnd = max(s.maxEnd, maxEndIn(line))
		return nil
	})
	s.offset += stats.consumed
	budget.spend(stats.consumed)
}

// The end-time keys of a console line (one span) and of an OTLP/JSON line
// (any number of spans; the value is a string).
var (
	consoleEndKey = []byte(`"end_time_unix_nano":`)
	otlpEndKey    = []byte(`"endTimeUnixNano":`)
)

// maxEndIn is the largest span end time in a spans-file line (unix ns), 0
// when it has none.
func maxEndIn(line []byte) int64 {
	var end int64
	for _, key := range [][]byte{consoleEndKey, otlpEndKey} {
		for rest := line; ; {
			i := bytes.Index(rest, key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			end = max(end, leadingInt(rest))
		}
	}
	return end
}

// leadingInt reads the decimal number at the start of b (after spaces and
// an opening quote), 0 when there is none or it overflows.
func leadingInt(b []byte) int64 {
	b = bytes.TrimLeft(b, " \"")
	var v int64
	for i, c := range b {
		if c < '0' || c > '9' {
			if i == 0 {
				return 0
			}
			break
		}
		if v > (1<<63-1-int64(c-'0'))/10 {
			return 0
		}
		v = v*10 + int64(c-'0')
	}
	return v
}
