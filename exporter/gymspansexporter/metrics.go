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

func (m *exporterMetrics) tornTailCut(name string) {
	m.tornTails.Add(context.Background(), 1)
	m.logger.warn("torn", "cut a torn last line (left by a crash) before appending", zap.String("file", name))
}

func (m *exporterMetrics) rotated(string) { m.rotations.Add(context.Background(), 1) }

func (m *exporterMetrics) openFilesChanged(delta int) {
	m.openFiles.Add(context.Background(), int64(delta))
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
