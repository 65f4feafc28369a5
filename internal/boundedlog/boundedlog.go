// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package boundedlog bounds what the components log about what they are
// sent: how often a repeated line is written (Limiter) and how much of an
// untrusted string a line holds (Truncate).
package boundedlog // import "github.com/otelcol-gym/otelcol-gym/internal/boundedlog"

import (
	"sync"
	"time"
)

// Limiter lets one line a key through per interval and counts the
// occurrences it held back in between.
type Limiter struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int64
}

// NewLimiter returns a Limiter that lets a line about a key through at most
// once every interval, by the clock now.
func NewLimiter(every time.Duration, now func() time.Time) *Limiter {
	return &Limiter{every: every, now: now, last: map[string]time.Time{}, held: map[string]int64{}}
}

// Allow records count occurrences of key. It reports whether a line about
// key may be written now (the first time, and once every interval after),
// and then how many occurrences the line stands for: count and those held
// back since the last line.
func (l *Limiter) Allow(key string, count int64) (int64, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[key] += count
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return 0, false
	}
	l.last[key] = now
	n := l.held[key]
	l.held[key] = 0
	return n, true
}

// Forget lets the next line about key through at once (a new episode of
// what it is about), dropping the occurrences held back.
func (l *Limiter) Forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, key)
	delete(l.held, key)
}

// Truncate bounds an untrusted string put in a log line to n bytes.
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
