// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// The exporter's own metrics (documented in documentation.md).
const (
	metricLinesWritten = "otelcol_exporter_gymspans_lines_written"
	metricBytesWritten = "otelcol_exporter_gymspans_bytes_written"
	metricRejected     = "otelcol_exporter_gymspans_rejected_spans"
	metricWriteErrors  = "otelcol_exporter_gymspans_write_errors"
	metricTornTails    = "otelcol_exporter_gymspans_torn_tails_cut"
	metricRotations    = "otelcol_exporter_gymspans_rotations"
	metricOpenFiles    = "otelcol_exporter_gymspans_open_files"
	metricFsyncErrors  = "otelcol_exporter_gymspans_fsync_errors"
	metricOpens        = "otelcol_exporter_gymspans_file_opens"
	metricCreates      = "otelcol_exporter_gymspans_file_creates"
	metricLocks        = "otelcol_exporter_gymspans_file_locks"
	metricAppends      = "otelcol_exporter_gymspans_file_appends"
	metricStats        = "otelcol_exporter_gymspans_file_stats"
	metricTailReads    = "otelcol_exporter_gymspans_tail_reads"
	metricPendingBytes = "otelcol_exporter_gymspans_pending_bytes"
	metricDuplicates   = "otelcol_exporter_gymspans_duplicate_spans"
	metricRecovered    = "otelcol_exporter_gymspans_recovered_lines"
)

// Values of the "file" attribute: which kind of file a line went to.
const (
	fileKindRollout  = "rollout"
	fileKindCombined = "combined"
	fileKindRollouts = "rollouts"
)

// fileKinds indexes the per-kind counts of a batch.

var fileKinds = [3]string{fileKindRollout, fileKindCombined, fileKindRollouts}

func fileKindIndex(kind string) int {
	for i, k := range fileKinds {
		if k == kind {
			return i
		}
	}
	return 0
}

// Values of the "reason" attribute of rejected_spans: why a span with a
// rollout id went to the combined file only.
const (
	rejectRolloutID  = "invalid_rollout_id"
	rejectRunID      = "invalid_run_id"
	rejectUnsafeFile = "unsafe_file"
)

type exporterMetrics struct {
	lines       metric.Int64Counter
	bytes       metric.Int64Counter
	rejected    metric.Int64Counter
	writeErrors metric.Int64Counter
	tornTails   metric.Int64Counter
	rotations   metric.Int64Counter
	openFiles   metric.Int64UpDownCounter
	fsyncErrors metric.Int64Counter
	opens       metric.Int64Counter
	creates     metric.Int64Counter
	locks       metric.Int64Counter
	appends     metric.Int64Counter
	stats       metric.Int64Counter
	tailReads   metric.Int64Counter
	pending     metric.Int64UpDownCounter
	duplicates  metric.Int64Counter
	recovered   metric.Int64Counter

	kindSets   map[string]metric.MeasurementOption
	reasonSets map[string]metric.MeasurementOption

	logger *logLimiter
}

func newExporterMetrics(set component.TelemetrySettings, logger *logLimiter) (*exporterMetrics, error) {
	meter := set.MeterProvider.Meter("github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter")
	m := &exporterMetrics{logger: logger, kindSets: map[string]metric.MeasurementOption{}, reasonSets: map[string]metric.MeasurementOption{}}
	var err, e error
	m.lines, e = meter.Int64Counter(metricLinesWritten, metric.WithDescription("Lines written, by file kind (rollout, combined, rollouts)."), metric.WithUnit("{line}"))
	err = joinErr(err, e)
	m.bytes, e = meter.Int64Counter(metricBytesWritten, metric.WithDescription("Bytes written, by file kind."), metric.WithUnit("By"))
	err = joinErr(err, e)
	m.rejected, e = meter.Int64Counter(metricRejected, metric.WithDescription("Spans with a rollout id that were not written to a per-rollout file (the combined file still has them), by reason."), metric.WithUnit("{span}"))
	err = joinErr(err, e)
	m.writeErrors, e = meter.Int64Counter(metricWriteErrors, metric.WithDescription("Failed appends of a batch to a file, by file kind."), metric.WithUnit("{error}"))
	err = joinErr(err, e)
	m.tornTails, e = meter.Int64Counter(metricTornTails, metric.WithDescription("Torn last lines (left by a crash) cut before appending."), metric.WithUnit("{line}"))
	err = joinErr(err, e)
	m.rotations, e = meter.Int64Counter(metricRotations, metric.WithDescription("Rotations of the combined file."), metric.WithUnit("{rotation}"))
	err = joinErr(err, e)
	m.openFiles, e = meter.Int64UpDownCounter(metricOpenFiles, metric.WithDescription("Descriptors held inside the capture dir, besides the dir itself."), metric.WithUnit("{file}"))
	err = joinErr(err, e)
	m.fsyncErrors, e = meter.Int64Counter(metricFsyncErrors, metric.WithDescription("Failed fsyncs."), metric.WithUnit("{error}"))
	err = joinErr(err, e)
	m.opens, e = meter.Int64Counter(metricOpens, metric.WithDescription("Files opened for appending (a create included), by file kind."), metric.WithUnit("{open}"))
	err = joinErr(err, e)
	m.creates, e = meter.Int64Counter(metricCreates, metric.WithDescription("Files created, by file kind."), metric.WithUnit("{file}"))
	err = joinErr(err, e)
	m.locks, e = meter.Int64Counter(metricLocks, metric.WithDescription("Exclusive flocks taken for an append, by file kind."), metric.WithUnit("{lock}"))
	err = joinErr(err, e)
	m.appends, e = meter.Int64Counter(metricAppends, metric.WithDescription("Appends (one or more write(2) calls under one lock), by file kind."), metric.WithUnit("{append}"))
	err = joinErr(err, e)
	m.stats, e = meter.Int64Counter(metricStats, metric.WithDescription("Appends that read the file's state first (an fstat), by file kind."), metric.WithUnit("{stat}"))
	err = joinErr(err, e)
	m.tailReads, e = meter.Int64Counter(metricTailReads, metric.WithDescription("Appends that read a file's last byte (its size was not where our last append ended)."), metric.WithUnit("{read}"))
	err = joinErr(err, e)
	m.pending, e = meter.Int64UpDownCounter(metricPendingBytes, metric.WithDescription("Bytes of rollout-file and rollouts.jsonl lines in the combined file, gathered in memory for their next flush."), metric.WithUnit("By"))
	err = joinErr(err, e)
	m.duplicates, e = meter.Int64Counter(metricDuplicates, metric.WithDescription("Spans dropped because a span with the same original trace id and span id was written before (a sender's retry, a redelivery after a crash)."), metric.WithUnit("{span}"))
	err = joinErr(err, e)
	m.recovered, e = meter.Int64Counter(metricRecovered, metric.WithDescription("Lines completed from the combined file at start, after a crash, by file kind."), metric.WithUnit("{line}"))
	err = joinErr(err, e)
	for _, k := range []string{fileKindRollout, fileKindCombined, fileKindRollouts} {
		m.kindSets[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("file", k)))
	}
	for _, r := range []string{rejectRolloutID, rejectRunID, rejectUnsafeFile} {
		m.reasonSets[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	return m, err
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (m *exporterMetrics) written(kind string, lines, bytes int) {
	ctx := context.Background()
	m.lines.Add(ctx, int64(lines), m.kindSets[kind])
	m.bytes.Add(ctx, int64(bytes), m.kindSets[kind])
}

func (m *exporterMetrics) reject(reason string, n int) {
	m.rejected.Add(context.Background(), int64(n), m.reasonSets[reason])
}

func (m *exporterMetrics) writeFailed(kind string) {
	m.writeErrors.Add(context.Background(), 1, m.kindSets[kind])
}

// storeObserver

func (m *exporterMetrics) statted(kind string) {
	m.stats.Add(context.Background(), 1, m.kindSets[kind])
}

func (m *exporterMetrics) tailRead(string) { m.tailReads.Add(context.Background(), 1) }

func (m *exporterMetrics) tornTailCut(name string) {
	m.tornTails.Add(context.Background(), 1)
	m.logger.warn("torn", "cut a torn last line (left by a crash) before appending", zap.String("file", name))
}

func (m *exporterMetrics) rotated(string) { m.rotations.Add(context.Background(), 1) }

func (m *exporterMetrics) openFilesChanged(delta int) {
	m.openFiles.Add(context.Background(), int64(delta))
}

func (m *exporterMetrics) opened(kind string, created bool) {
	m.opens.Add(context.Background(), 1, m.kindSets[kind])
	if created {
		m.creates.Add(context.Background(), 1, m.kindSets[kind])
	}
}

func (m *exporterMetrics) locked(kind string) { m.locks.Add(context.Background(), 1, m.kindSets[kind]) }

func (m *exporterMetrics) appended(kind string) {
	m.appends.Add(context.Background(), 1, m.kindSets[kind])
}

func (m *exporterMetrics) pendingChanged(delta int) {
	if delta != 0 {
		m.pending.Add(context.Background(), int64(delta))
	}
}

func (m *exporterMetrics) duplicate(n int) {
	if n > 0 {
		m.duplicates.Add(context.Background(), int64(n))
	}
}

func (m *exporterMetrics) recoveredLines(kind string, n int) {
	if n > 0 {
		m.recovered.Add(context.Background(), int64(n), m.kindSets[kind])
	}
}

func (m *exporterMetrics) fsyncFailed(name string, err error) {
	m.fsyncErrors.Add(context.Background(), 1)
	m.logger.warn("fsync", "fsync failed", zap.String("file", name), zap.Error(err))
}

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
