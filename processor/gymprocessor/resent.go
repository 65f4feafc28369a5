// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// A span that arrives again while its first copy is held is, when nothing
// in it differs, the same span sent again: a sender retrying a batch the
// collector refused, or one a killed collector had recorded (replayed from
// the journal) but not acknowledged (design §4.6). Passed on at once as
// other duplicates are, it would leave before its first copy, in no rollout
// yet, and a file exporter that keeps the first of two copies (gymspans)
// would keep that one. Instead the held span counts it (heldSpan.copies,
// checkpointed with it) and it leaves with the held span, as a copy of the
// held span as rewritten (round.assemble): every span that enters leaves,
// each copy with its rollout. A duplicate that differs in anything, or
// whose first copy already left, is passed on at once as before.

// TakeCopy counts the span arriving now as a copy of the span held in s
// when it is an unchanged one (from the same resource and scope), and
// reports whether it did (the core then takes it out of the batch).
func (e *engine) TakeCopy(s rollout.Slot) bool {
	hs := &e.held[s]
	rs := hs.origin.rs
	scope := rs.ScopeSpans().At(0).Scope()
	c := &e.cur
	if !sameSpan(hs.span, c.span) || !rs.Resource().Attributes().Equal(c.rs.Resource().Attributes()) ||
		scope.Name() != c.ss.Scope().Name() || scope.Version() != c.ss.Scope().Version() {
		return false
	}
	hs.copies++
	return true
}

// sameSpan reports whether b holds what a's sender wrote into it.
func sameSpan(a, b ptrace.Span) bool {
	if a.TraceID() != b.TraceID() || a.SpanID() != b.SpanID() || a.ParentSpanID() != b.ParentSpanID() ||
		a.Kind() != b.Kind() || a.Name() != b.Name() || a.Flags() != b.Flags() ||
		a.StartTimestamp() != b.StartTimestamp() || a.EndTimestamp() != b.EndTimestamp() ||
		a.Status().Code() != b.Status().Code() || a.Status().Message() != b.Status().Message() ||
		a.TraceState().AsRaw() != b.TraceState().AsRaw() || !a.Attributes().Equal(b.Attributes()) ||
		a.DroppedAttributesCount() != b.DroppedAttributesCount() {
		return false
	}
	ae, be := a.Events(), b.Events()
	if ae.Len() != be.Len() || a.DroppedEventsCount() != b.DroppedEventsCount() {
		return false
	}
	for i := range ae.Len() {
		x, y := ae.At(i), be.At(i)
		if x.Name() != y.Name() || x.Timestamp() != y.Timestamp() || !x.Attributes().Equal(y.Attributes()) {
			return false
		}
	}
	al, bl := a.Links(), b.Links()
	if al.Len() != bl.Len() || a.DroppedLinksCount() != b.DroppedLinksCount() {
		return false
	}
	for i := range al.Len() {
		x, y := al.At(i), bl.At(i)
		if x.TraceID() != y.TraceID() || x.SpanID() != y.SpanID() || !x.Attributes().Equal(y.Attributes()) {
			return false
		}
	}
	return true
}
