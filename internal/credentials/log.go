// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials // import "github.com/otelcol-gym/otelcol-gym/internal/credentials"

import (
	"strings"
	"sync"

	"go.uber.org/zap"
)

const (
	// maxLoggedKeys bounds the keys a Log remembers: keys come from the
	// data, and a sender could make every one different.
	maxLoggedKeys = 64
	// maxKeyLen bounds the part of a key a line shows.
	maxKeyLen = 128
)

// Log tells the user, once per key, that attributes under that key are
// removed: the key, never the value. It is safe for concurrent use.
type Log struct {
	logger *zap.Logger
	// metric names the metric that counts every removal, for the line.
	metric string

	mu   sync.Mutex
	seen map[string]struct{}
	full bool
}

// NewLog logs through logger; metric is the name of the component's metric
// that counts the removals.
func NewLog(logger *zap.Logger, metric string) *Log {
	return &Log{logger: logger, metric: metric, seen: map[string]struct{}{}}
}

// Removed logs key the first time it is removed (Removed's signature).
func (l *Log) Removed(key string) {
	if l == nil || l.logger == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[key]; ok || l.full {
		return
	}
	if len(l.seen) == maxLoggedKeys {
		l.full = true
		l.logger.Warn("more attribute keys that carry credentials were removed; they are no longer named one by one",
			zap.Int("keys_named", maxLoggedKeys), zap.String("counted_in", l.metric))
		return
	}
	l.seen[strings.Clone(key)] = struct{}{}
	shown := key
	if len(shown) > maxKeyLen {
		shown = shown[:maxKeyLen] + "..."
	}
	l.logger.Warn("an attribute that carries credentials was removed before anything was written or forwarded; its value is never logged, and later removals of this key are only counted",
		zap.String("key", shown), zap.String("counted_in", l.metric))
}
