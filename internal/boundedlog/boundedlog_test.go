// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package boundedlog

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(time.Minute, func() time.Time { return now })
	steps := []struct {
		key     string
		count   int64
		advance time.Duration
		n       int64
		ok      bool
	}{
		{"a", 2, 0, 2, true},                 // the first line
		{"a", 1, time.Second, 0, false},      // held back
		{"b", 5, 0, 5, true},                 // keys are independent
		{"a", 3, 30 * time.Second, 0, false}, // still within the minute
		{"a", 1, 30 * time.Second, 5, true},  // a minute on: this one and the 4 held
		{"a", 1, 0, 0, false},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		n, ok := l.Allow(s.key, s.count)
		if n != s.n || ok != s.ok {
			t.Fatalf("step %d: Allow(%q, %d) = %d, %v; want %d, %v", i, s.key, s.count, n, ok, s.n, s.ok)
		}
	}
}

// Forget starts a key over: its next line goes through at once, without
// what was held back before.
func TestForget(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(time.Minute, func() time.Time { return now })
	if _, ok := l.Allow("a", 1); !ok {
		t.Fatal("the first line is let through")
	}
	if _, ok := l.Allow("a", 2); ok {
		t.Fatal("the second, within the minute, is held back")
	}
	l.Forget("a")
	if n, ok := l.Allow("a", 1); !ok || n != 1 {
		t.Fatalf("after Forget: Allow = %d, %v; want 1, true", n, ok)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"abcdef", 3, "abc"}, {"ab", 3, "ab"}, {"", 0, ""}} {
		if got := Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
