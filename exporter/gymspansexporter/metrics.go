// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/metadata"
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
	rejectRolloutID  = capturedir.RejectRolloutID
	rejectRunID      = capturedir.RejectRunID
	rejectUnsafeFile = "unsafe_file"
)

// exporterMetrics records the exporter's metrics, declared in metadata.yaml
// (documentation.md lists them) and built by mdatagen.
type exporterMetrics struct {
	*metadata.TelemetryBuilder

	kindSets   map[string]metric.MeasurementOption
	reasonSets map[string]metric.MeasurementOption

	logger *logLimiter
}

// Attribute names of metadata.yaml.
const (
	metricAttrFile    = "file"
	metricAttrReason  = "reason"
	metricAttrOutcome = "outcome"
)

func newExporterMetrics(set component.TelemetrySettings, logger *logLimiter) (*exporterMetrics, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("gymspans exporter metrics: %w", err)
	}
	m := &exporterMetrics{TelemetryBuilder: b, logger: logger, kindSets: map[string]metric.MeasurementOption{}, reasonSets: map[string]metric.MeasurementOption{}}
	for _, k := range fileKinds {
		m.kindSets[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String(metricAttrFile, k)))
	}
	for _, r := range []string{rejectRolloutID, rejectRunID, rejectUnsafeFile} {
		m.reasonSets[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String(metricAttrReason, r)))
	}
	return m, nil
}

func (m *exporterMetrics) written(kind string, lines, bytes int) {
	ctx := context.Background()
	m.ExporterGymspansLinesWritten.Add(ctx, int64(lines), m.kindSets[kind])
	m.ExporterGymspansBytesWritten.Add(ctx, int64(bytes), m.kindSets[kind])
}

func (m *exporterMetrics) reject(reason string, n int) {
	m.ExporterGymspansRejectedSpans.Add(context.Background(), int64(n), m.reasonSets[reason])
}

func (m *exporterMetrics) writeFailed(kind string) {
	m.ExporterGymspansWriteErrors.Add(context.Background(), 1, m.kindSets[kind])
}

// capturedir.Observer

var _ capturedir.Observer = (*exporterMetrics)(nil)

func (m *exporterMetrics) Statted(kind string) {
	m.ExporterGymspansFileStats.Add(context.Background(), 1, m.kindSets[kind])
}

func (m *exporterMetrics) TailRead(string) { m.ExporterGymspansTailReads.Add(context.Background(), 1) }

func (m *exporterMetrics) TornTailCut(name string) {
	m.ExporterGymspansTornTailsCut.Add(context.Background(), 1)
	m.logger.warn("torn", "cut a torn last line (left by a crash) before appending", zap.String("file", name))
}

func (m *exporterMetrics) Rotated(string) { m.ExporterGymspansRotations.Add(context.Background(), 1) }

func (m *exporterMetrics) OpenFilesChanged(delta int) {
	m.ExporterGymspansOpenFiles.Add(context.Background(), int64(delta))
}

func (m *exporterMetrics) Opened(kind string, created bool) {
	m.ExporterGymspansFileOpens.Add(context.Background(), 1, m.kindSets[kind])
	if created {
		m.ExporterGymspansFileCreates.Add(context.Background(), 1, m.kindSets[kind])
	}
}

func (m *exporterMetrics) Locked(kind string) {
	m.ExporterGymspansFileLocks.Add(context.Background(), 1, m.kindSets[kind])
}

func (m *exporterMetrics) Appended(kind string) {
	m.ExporterGymspansFileAppends.Add(context.Background(), 1, m.kindSets[kind])
}

func (m *exporterMetrics) pendingChanged(delta int) {
	if delta != 0 {
		m.ExporterGymspansPendingBytes.Add(context.Background(), int64(delta))
	}
}

func (m *exporterMetrics) duplicate(n int) {
	if n > 0 {
		m.ExporterGymspansDuplicateSpans.Add(context.Background(), int64(n))
	}
}

func (m *exporterMetrics) recoveredLines(kind string, n int) {
	if n > 0 {
		m.ExporterGymspansRecoveredLines.Add(context.Background(), int64(n), m.kindSets[kind])
	}
}

func (m *exporterMetrics) FsyncFailed(name string, err error) {
	m.ExporterGymspansFsyncErrors.Add(context.Background(), 1)
	m.logger.warn("fsync", "fsync failed", zap.String("file", name), zap.Error(err))
}
