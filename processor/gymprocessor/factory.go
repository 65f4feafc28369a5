// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/credentials"

	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/metadata"
)

const (
	defaultSettle      = 5 * time.Second
	defaultWait        = 30 * time.Second
	defaultRolloutWait = 2 * time.Hour
)

// NewFactory returns the factory of the gym processor. It is a
// gymconv.RootMarker: the gymspans exporter of the same collector asks it,
// through the host, whether it created a processor.
func NewFactory(opts ...FactoryOption) processor.Factory {
	f := &factory{clock: timesource.Real{}}
	for _, o := range opts {
		o(f)
	}
	f.Factory = processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(f.createTraces, metadata.TracesStability),
	)
	return f
}

// factory is the gym processor's factory and what it created.
type factory struct {
	processor.Factory
	clock   clock
	created atomic.Bool
}

// FactoryOption changes what NewFactory's processors are built with.
type FactoryOption func(*factory)

// WithTimeSource makes the factory's processors read the time and take
// their ticks from src instead of the wall clock. It exists for
// `otelcol-gym replay` (internal/replay), which drives the processor's
// settle and wait deadlines by the replayed spans' own times, so a past run
// replays in seconds and decides as it did live. A collector never sets it.
func WithTimeSource(src timesource.Source) FactoryOption {
	return func(f *factory) { f.clock = src }
}

var _ gymconv.RootMarker = (*factory)(nil)

// MarksRolloutRoots reports whether f created a gym processor: each marks
// its rollouts' roots (gymconv.RolloutRootAttribute).
func (f *factory) MarksRolloutRoots() bool { return f.created.Load() }

func createDefaultConfig() component.Config {
	return &Config{
		RolloutAttribute:  gymconv.RolloutAttribute,
		URLAttributes:     gymconv.DefaultURLAttributes(),
		URLPrefix:         gymconv.URLPrefix,
		RolloutIDPattern:  gymconv.RolloutIDPattern,
		ServiceAttributes: gymconv.DefaultServiceAttributes(),
		RunAttribute:      gymconv.RunAttribute,
		ModelRoutes:       []string{"/v1/responses", "/v1/chat/completions", "/v1/completions"},
		JobSpanNames:      []string{gymconv.JobSpanName},
		Settle:            defaultSettle,
		Wait:              defaultWait,
		RolloutWait:       defaultRolloutWait,
		MaxPendingSpans:   1_000_000,
		MaxPendingBytes:   512 << 20,
		Split: SplitConfig{
			Enabled:         true,
			MaxJobLinks:     128,
			MaxTrackedJobs:  1024,
			JobTTL:          24 * time.Hour,
			MaxTrackedRoots: 100_000,
		},
		ServiceMap: ServiceMapConfig{
			Enabled:               true,
			SynthesizeClientSpans: true,
		},
		Credentials: credentials.NewDefaultConfig(),
	}
}

func (f *factory) createTraces(
	_ context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Traces,
) (processor.Traces, error) {
	p, err := newGymProcessorWithClock(set, cfg.(*Config), next, f.clock)
	if err == nil {
		f.created.Store(true)
	}
	return p, err
}
