// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymcredentialsprocessor removes the attributes that carry
// credentials (design §6) in pipelines the gym processor is not in: the
// shipped configs' metrics and logs pipelines, whose file and OTLP exporters
// would write or forward a resource's Authorization. The rule is
// internal/credentials', the same the gym processor and the gymspans
// exporter apply to traces.
//
//	ConsumeX -> In* (reads only) -> [a credential: copy, Remove* on the copy, count, log each key once] -> next
package gymcredentialsprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcredentialsprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcredentialsprocessor/internal/metadata"
)

// removedMetric is the name the user finds the removals under.
const removedMetric = "otelcol_processor_gymcredentials_removed"

type credentialsProcessor struct {
	rule *credentials.Rule
	log  *credentials.Log
	tel  *metadata.TelemetryBuilder
}

func newCredentialsProcessor(set processor.Settings, cfg *Config) (*credentialsProcessor, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("gymcredentials processor: creating metrics: %w", err)
	}
	return &credentialsProcessor{rule: cfg.Rule(), log: credentials.NewLog(set.Logger, removedMetric), tel: tel}, nil
}

func (p *credentialsProcessor) count(ctx context.Context, n int) {
	if n > 0 {
		p.tel.ProcessorGymcredentialsRemoved.Add(ctx, int64(n))
	}
}

// processTraces is td, or a copy of it without the attributes that carry
// credentials (resources, spans, span events, links).
func (p *credentialsProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	if !p.rule.InTraces(td) {
		return td, nil
	}
	own := ptrace.NewTraces()
	td.CopyTo(own)
	p.count(ctx, p.rule.RemoveFromTraces(own, p.log.Removed))
	return own, nil
}

// processMetrics is md, or a copy of it whose resources hold no attribute
// that carries credentials.
func (p *credentialsProcessor) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	if !p.rule.InMetrics(md) {
		return md, nil
	}
	own := pmetric.NewMetrics()
	md.CopyTo(own)
	p.count(ctx, p.rule.RemoveFromMetrics(own, p.log.Removed))
	return own, nil
}

// processLogs is ld, or a copy of it whose resources hold no attribute that
// carries credentials.
func (p *credentialsProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	if !p.rule.InLogs(ld) {
		return ld, nil
	}
	own := plog.NewLogs()
	ld.CopyTo(own)
	p.count(ctx, p.rule.RemoveFromLogs(own, p.log.Removed))
	return own, nil
}
