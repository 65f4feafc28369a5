// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/boundedlog"
)

// logLimiter logs at most one warning per key and interval, with the count
// of warnings it held back.
type logLimiter struct {
	logger *zap.Logger
	limit  *boundedlog.Limiter
}

func newLogLimiter(logger *zap.Logger, interval time.Duration) *logLimiter {
	return &logLimiter{logger: logger, limit: boundedlog.NewLimiter(interval, time.Now)}
}

func (l *logLimiter) warn(key, msg string, fields ...zap.Field) {
	n, ok := l.limit.Allow(key, 1)
	if !ok {
		return
	}
	if n > 1 {
		fields = append(fields, zap.Int64("suppressed_since_last", n-1))
	}
	l.logger.Warn(msg, fields...)
}
