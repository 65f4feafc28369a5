// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

// gymProcessor is, for now, a validated pass-through; the rollout logic of
// SPEC §4 lands in its own change.
type gymProcessor struct {
	next consumer.Traces
}

func newGymProcessor(_ processor.Settings, cfg *Config, next consumer.Traces) (*gymProcessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gym processor: %w", err)
	}
	return &gymProcessor{next: next}, nil
}

func (p *gymProcessor) Start(context.Context, component.Host) error { return nil }

func (p *gymProcessor) Shutdown(context.Context) error { return nil }

func (p *gymProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (p *gymProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return p.next.ConsumeTraces(ctx, td)
}
