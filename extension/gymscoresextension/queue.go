// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"slices"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/collector/config/configretry"
)

// queue holds the scores waiting to be sent or retried, at most max, each
// with its own backoff. One goroutine owns it.
type queue struct {
	max   int
	retry configretry.BackOffConfig
	items []*item
	keys  map[string]bool
}

// item is a queued score.
type item struct {
	s     score
	key   string
	due   time.Time // when to try it next
	first time.Time // its first failure; zero before
	b     *backoff.ExponentialBackOff
}

func newQueue(max int, retry configretry.BackOffConfig) *queue {
	return &queue{max: max, retry: retry, keys: map[string]bool{}}
}

func (q *queue) has(key string) bool { return q.keys[key] }
func (q *queue) len() int            { return len(q.items) }

// add queues s, due now; false when the queue is full.
func (q *queue) add(s score, now time.Time) bool {
	if len(q.items) >= q.max {
		return false
	}
	k := s.key()
	q.keys[k] = true
	q.items = append(q.items, &item{s: s, key: k, due: now})
	return true
}

// due are the items due at now, the earliest first.
func (q *queue) due(now time.Time) []*item {
	var out []*item
	for _, it := range q.items {
		if !it.due.After(now) {
			out = append(out, it)
		}
	}
	slices.SortStableFunc(out, func(a, b *item) int { return a.due.Compare(b.due) })
	return out
}

// remove takes it out of the queue (sent, or given up).
func (q *queue) remove(it *item) {
	delete(q.keys, it.key)
	q.items = slices.DeleteFunc(q.items, func(x *item) bool { return x == it })
}

// failed schedules it's next try after a failure at now; false when its
// retries are over (retry_on_failure disabled, or max_elapsed_time since
// its first failure).
func (q *queue) failed(it *item, now time.Time) bool {
	if !q.retry.Enabled {
		return false
	}
	if it.first.IsZero() {
		it.first = now
		it.b = &backoff.ExponentialBackOff{InitialInterval: q.retry.InitialInterval, RandomizationFactor: q.retry.RandomizationFactor,
			Multiplier: q.retry.Multiplier, MaxInterval: q.retry.MaxInterval}
		it.b.Reset()
	}
	if q.retry.MaxElapsedTime > 0 && now.Sub(it.first) >= q.retry.MaxElapsedTime {
		return false
	}
	it.due = now.Add(it.b.NextBackOff())
	return true
}
