// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// clock is the processor's source of time; tests inject a fake one.
type clock = timesource.Source

// tickPeriod is how often the timer goroutine looks for expired deadlines:
// a fifth of settle, between 10ms and 1s.
func tickPeriod(settle time.Duration) time.Duration {
	return min(max(settle/5, 10*time.Millisecond), time.Second)
}
