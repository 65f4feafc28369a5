// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
)

// pipeline is a live run's traces pipeline, in process: the gym processor,
// the gymcapture processor when there are captures, and the gymspans
// exporter, built by their own factories with their default configuration
// (the embedded default's), the gym processor's clock the spans' own times
// (spanClock), and a count of what reaches the exporter.
type pipeline struct {
	clock   *spanClock
	proc    processor.Traces
	capture processor.Traces // nil without captures
	exp     exporter.Traces
	procCfg *gymprocessor.Config
	out     *counter
}

// newPipeline builds and starts the pipeline writing into dir, with GenAI
// from the captures in captures ("": none). gymcapture reads the wall
// clock: every replayed span ended long before it arrives, so none waits
// for its capture line (the captures are complete).
func newPipeline(ctx context.Context, dir, captures string, logger *zap.Logger) (*pipeline, error) {
	p := &pipeline{clock: newSpanClock()}
	tel := componenttest.NewNopTelemetrySettings()
	tel.Logger = logger
	host := componenttest.NewNopHost()

	ef := gymspansexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*gymspansexporter.Config)
	ecfg.CaptureDir = dir
	// The processor below marks its rollouts' roots: what rollout_roots
	// auto finds in a collector that has one.
	ecfg.RolloutRoots = "marked"
	exp, err := ef.CreateTraces(ctx, exporter.Settings{ID: component.NewID(ef.Type()), TelemetrySettings: withName(tel, "gymspans"), BuildInfo: component.NewDefaultBuildInfo()}, ecfg)
	if err != nil {
		return nil, fmt.Errorf("creating the gymspans exporter: %w", err)
	}
	p.exp = exp
	p.out = &counter{next: exp}
	var next consumer.Traces = p.out

	if captures != "" {
		cf := gymcaptureprocessor.NewFactory()
		ccfg := cf.CreateDefaultConfig().(*gymcaptureprocessor.Config)
		ccfg.CaptureDir = captures
		capture, err := cf.CreateTraces(ctx, processor.Settings{ID: component.NewID(cf.Type()), TelemetrySettings: withName(tel, "gymcapture"), BuildInfo: component.NewDefaultBuildInfo()}, ccfg, next)
		if err != nil {
			return nil, fmt.Errorf("creating the gymcapture processor: %w", err)
		}
		p.capture, next = capture, capture
	}

	pf := gymprocessor.NewFactory(gymprocessor.WithTimeSource(p.clock))
	p.procCfg = pf.CreateDefaultConfig().(*gymprocessor.Config)
	proc, err := pf.CreateTraces(ctx, processor.Settings{ID: component.NewID(pf.Type()), TelemetrySettings: withName(tel, "gym"), BuildInfo: component.NewDefaultBuildInfo()}, p.procCfg, next)
	if err != nil {
		return nil, fmt.Errorf("creating the gym processor: %w", err)
	}
	p.proc = proc

	// A collector starts its exporters first, then its processors from the
	// last to the first.
	started := []component.Component{}
	for _, c := range []component.Component{exp, p.capture, proc} {
		if c == nil {
			continue
		}
		if err := c.Start(ctx, host); err != nil {
			errs := []error{fmt.Errorf("starting the replay's pipeline: %w", err)}
			for _, s := range started {
				errs = append(errs, s.Shutdown(ctx))
			}
			return nil, errors.Join(errs...)
		}
		started = append([]component.Component{c}, started...)
	}
	return p, nil
}

func withName(tel component.TelemetrySettings, name string) component.TelemetrySettings {
	tel.Logger = tel.Logger.With(zap.String("component", name))
	return tel
}

// consume hands td to the processor as a live collector would have when
// the latest of its spans ended: the clock moves there first, and the
// processor's timer does what was due by then.
func (p *pipeline) consume(ctx context.Context, td ptrace.Traces) error {
	if p.clock.advanceTo(latestEnd(td).AsTime()) {
		p.clock.tick()
	}
	if err := p.proc.ConsumeTraces(ctx, td); err != nil {
		return fmt.Errorf("the gym processor refused a batch: %w", err)
	}
	return nil
}

// finish moves the clock past every deadline of the processor, lets its
// timer release what is due, and shuts the processor (which hands on all it
// still holds) and the exporter (which writes all it holds) down.
func (p *pipeline) finish(ctx context.Context) error {
	last := p.clock.Now().Add(p.procCfg.RolloutWait + p.procCfg.Wait + p.procCfg.Settle)
	if p.clock.advanceTo(last) {
		p.clock.tick()
	}
	var errs []error
	if err := p.proc.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shutting the gym processor down: %w", err))
	}
	if p.capture != nil {
		if err := p.capture.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutting the gymcapture processor down: %w", err))
		}
	}
	if err := p.exp.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shutting the gymspans exporter down: %w", err))
	}
	return errors.Join(errs...)
}

// latestEnd is the latest end time of td's spans.
func latestEnd(td ptrace.Traces) pcommon.Timestamp {
	var end pcommon.Timestamp
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				end = max(end, spans.At(k).EndTimestamp())
			}
		}
	}
	return end
}

// counter counts the spans and rollout roots the processor hands to the
// exporter.
type counter struct {
	next            consumer.Traces
	spans, rollouts atomic.Int64
}

func (c *counter) Capabilities() consumer.Capabilities { return c.next.Capabilities() }

func (c *counter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	spans, roots := int64(0), int64(0)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			spans += int64(ss.Len())
			for k := 0; k < ss.Len(); k++ {
				if v, ok := ss.At(k).Attributes().Get(gymconv.RolloutRootAttribute); ok && v.Bool() {
					roots++
				}
			}
		}
	}
	if err := c.next.ConsumeTraces(ctx, td); err != nil {
		return err
	}
	c.spans.Add(spans)
	c.rollouts.Add(roots)
	return nil
}
