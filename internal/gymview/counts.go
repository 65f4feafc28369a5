// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"sync"
	"time"
)

// maxCountEntries bounds the line-count cache; it is emptied when full.
const maxCountEntries = 8192

// countCache remembers how many lines a file had at a (size, mtime), so a
// page shown again (polling) counts only the files that grew.
type countCache struct {
	mu sync.Mutex
	m  map[string]countEntry
}

type countEntry struct {
	size  int64
	mtime time.Time
	lines int
}

// lines is the number of complete lines of name, or -1 when it cannot be
// read (missing, not a regular file).
func (c *countCache) lines(d *captureDir, name fileName) int {
	f, st, err := d.open(name)
	if err != nil {
		return -1
	}
	defer f.Close()
	c.mu.Lock()
	e, ok := c.m[name.s]
	c.mu.Unlock()
	if ok && e.size == st.Size() && e.mtime.Equal(st.ModTime()) {
		return e.lines
	}
	n, err := countLines(f)
	if err != nil {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCountEntries {
		c.m = map[string]countEntry{}
	}
	c.m[name.s] = countEntry{size: st.Size(), mtime: st.ModTime(), lines: n}
	return n
}
