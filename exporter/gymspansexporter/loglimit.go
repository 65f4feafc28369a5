// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// logLimiter logs at most one message per key and interval, with the count
// of messages it held back.
type logLimiter struct {
	logger   *zap.Logger
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newLogLimiter(logger *zap.Logger, interval time.Duration) *logLimiter {
	return &logLimiter{logger: logger, interval: interval, last: map[string]time.Time{}, held: map[string]int{}}
}

func (l *logLimiter) warn(key, msg string, fields ...zap.Field) {
	now := time.Now()
	l.mu.Lock()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.interval {
		l.held[key]++
		l.mu.Unlock()
		return
	}
	held := l.held[key]
	l.last[key] = now
	l.held[key] = 0
	l.mu.Unlock()
	if held > 0 {
		fields = append(fields, zap.Int("suppressed_since_last", held))
	}
	l.logger.Warn(msg, fields...)
}
