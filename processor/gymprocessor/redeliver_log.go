// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// What the user reads about redelivery (redeliver.go): one error line per
// heldLogEvery while the next consumer refuses, naming its error (gymspans
// names the capture dir and the cause: no space left on device, read-only
// file system), one line when it takes everything again, and the errors
// that refuse a batch upstream or drop spans.

// heldLogEvery is the least time between two lines about spans held for
// redelivery (and about batches refused upstream at a bound).
const heldLogEvery = 10 * time.Second

// Keys of the redelivery lines in diagnostics.held.
const (
	logHeld      = "held_for_redelivery"
	logAtBound   = "refused_at_bound"
	logPermanent = "dropped_permanently"
)

func (d *diagnostics) heldForRedelivery(held int64, next time.Duration, cause error) {
	if _, ok := d.held.Allow(logHeld, 1); ok {
		d.logger.Error(fmt.Sprintf("%v; %d spans held for redelivery by the gym processor (next attempt in %s; see otelcol_processor_gym_redelivery_spans)",
			cause, held, next.Round(time.Millisecond)),
			zap.Int64("spans_held", held))
	}
}

func (d *diagnostics) redelivered(outage time.Duration) {
	d.held.Forget(logHeld)
	d.logger.Info("gym processor: the next consumer takes spans again; every span held for redelivery was handed on",
		zap.Duration("refusing_for", outage.Round(time.Millisecond)))
}

func (d *diagnostics) refusingUpstream(err error) {
	if n, ok := d.held.Allow(logAtBound, 1); ok {
		d.logger.Error(err.Error(), zap.Int64("batches_refused", n))
	}
}

func (d *diagnostics) droppedPermanently(spans int64, err error) {
	if n, ok := d.held.Allow(logPermanent, spans); ok {
		d.logger.Error("gym processor: the next consumer refused spans with a permanent error (it will never take them); they are dropped, not held for redelivery",
			zap.Int64("spans", n), zap.Error(err))
	}
}

// errAtBound is the retryable error a batch is refused with at a pending
// bound while spans wait for redelivery.
func errAtBound(held, spans, bytes int64, cfg *Config, cause error) error {
	return fmt.Errorf("gym processor: %d spans wait for redelivery to the next consumer (%v), and with the spans held undecided "+
		"%d spans, about %d bytes, are pending: at max_pending_spans (%d) or max_pending_bytes (%d) the batch is refused; the sender retries it",
		held, cause, spans, bytes, cfg.MaxPendingSpans, cfg.MaxPendingBytes)
}
