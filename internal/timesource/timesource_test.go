// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesource

import (
	"testing"
	"time"
)

func TestRealTicks(t *testing.T) {
	var s Source = Real{}
	before := time.Now()
	c, stop := s.NewTicker(time.Millisecond)
	defer stop()
	at := <-c
	if at.Before(before) || s.Now().Before(at) {
		t.Fatalf("tick at %v, not between %v and now", at, before)
	}
}
