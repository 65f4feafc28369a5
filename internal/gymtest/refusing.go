// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// RefuseMode is how a RefusingTraces consumer refuses a batch.
type RefuseMode int

const (
	// RefuseWhole returns a plain error: the caller keeps the whole batch.
	RefuseWhole RefuseMode = iota
	// RefusePartly takes every other span and returns consumererror.NewTraces
	// with the rest, as gymspans does when some of its files fail.
	RefusePartly
	// RefuseReadOnly returns a plain error after marking the batch read-only,
	// as the collector's fan-out to several consumers does.
	RefuseReadOnly
	// RefusePermanently returns a permanent error: it will never take it.
	RefusePermanently
)

// RefuseModes names the modes a caller must retry through.
var RefuseModes = map[RefuseMode]string{RefuseWhole: "whole", RefusePartly: "partly", RefuseReadOnly: "read_only"}

// ErrDiskFull is the cause a RefusingTraces consumer gives.
var ErrDiskFull = errors.New("capture dir /x: write spans.jsonl: no space left on device")

// RefusingTraces is a next consumer on a disk that fills and is freed: while
// down, or on every Every-th call, it refuses as Mode says; otherwise it
// takes the batch into Sink.
type RefusingTraces struct {
	Sink  *consumertest.TracesSink
	Mode  RefuseMode
	Every int

	mu    sync.Mutex
	down  bool
	calls int
}

// NewRefusingTraces returns a consumer that refuses as mode says while down.
func NewRefusingTraces(mode RefuseMode, down bool) *RefusingTraces {
	return &RefusingTraces{Sink: new(consumertest.TracesSink), Mode: mode, down: down}
}

func (c *RefusingTraces) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// SetDown makes it refuse (true) or take (false) what comes next.
func (c *RefusingTraces) SetDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *RefusingTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	c.mu.Lock()
	c.calls++
	refuse := c.down || (c.Every > 0 && c.calls%c.Every == 0)
	c.mu.Unlock()
	if !refuse {
		return c.Sink.ConsumeTraces(ctx, td)
	}
	switch c.Mode {
	case RefusePartly:
		taken, rest := alternate(td)
		if taken.SpanCount() > 0 {
			_ = c.Sink.ConsumeTraces(ctx, taken)
		}
		return consumererror.NewTraces(ErrDiskFull, rest)
	case RefuseReadOnly:
		td.MarkReadOnly()
		return ErrDiskFull
	case RefusePermanently:
		return consumererror.NewPermanent(ErrDiskFull)
	}
	return ErrDiskFull
}

// alternate copies every other span of td into taken, the others into rest.
func alternate(td ptrace.Traces) (taken, rest ptrace.Traces) {
	taken, rest = ptrace.NewTraces(), ptrace.NewTraces()
	i := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				dst := taken
				if i%2 == 1 {
					dst = rest
				}
				i++
				drs := dst.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(drs.Resource())
				dss := drs.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(dss.Scope())
				sp.CopyTo(dss.Spans().AppendEmpty())
			}
		}
	}
	return taken, rest
}

// Refused is what a caller keeps of td after err, as the gym processor does
// (refusedPart): the data of a consumererror.Traces, else td itself (copied
// when a fan-out made it read-only); ok is false for a permanent error.
func Refused(err error, td ptrace.Traces) (ptrace.Traces, bool) {
	var te consumererror.Traces
	switch {
	case errors.As(err, &te):
		td = te.Data()
	case consumererror.IsPermanent(err):
		return ptrace.Traces{}, false
	}
	if td.IsReadOnly() {
		c := ptrace.NewTraces()
		td.CopyTo(c)
		td = c
	}
	return td, true
}
