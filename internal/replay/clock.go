// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"sync"
	"time"
)

// spanClock is the gym processor's time during a replay
// (timesource.Source): it stands where the replay has got to in the spans'
// own times, moves only forward, and ticks only when the replay says so.
type spanClock struct {
	mu    sync.Mutex
	now   time.Time
	ticks chan time.Time
}

func newSpanClock() *spanClock {
	return &spanClock{now: time.Unix(0, 0).UTC(), ticks: make(chan time.Time)}
}

// Now is where the replay stands.
func (c *spanClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns the channel tick sends on; the period is the
// processor's, which the replay does not follow: it ticks when the clock
// moves.
func (c *spanClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return c.ticks, func() {}
}

// advanceTo moves the clock to t when t is later, and reports whether it
// moved.
func (c *spanClock) advanceTo(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.After(c.now) {
		return false
	}
	c.now = t
	return true
}

// tick hands the processor's timer one tick and returns once the timer has
// done what it is due: the channel is unbuffered, and the timer takes the
// second tick only after it has finished with the first (the second finds
// nothing more due at the same time). Only while the processor runs
// (between its Start and its Shutdown).
func (c *spanClock) tick() {
	now := c.Now()
	c.ticks <- now
	c.ticks <- now
}
