// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestParentFlagsForgetsTheOldest: parentFlags holds at most
// maxPrintedSpans spans; past that the oldest is forgotten, and a span whose
// parent was forgotten gets no flags, as one whose parent was never printed.
func TestParentFlagsForgetsTheOldest(t *testing.T) {
	p := newParentFlags()
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	id := func(n int) pcommon.SpanID {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n)+1)
		return pcommon.SpanID(b)
	}
	child := func(parent pcommon.SpanID) ptrace.Span {
		s := ptrace.NewSpan()
		s.SetSpanID(id(-2))
		s.SetParentSpanID(parent)
		return s
	}
	for n := 0; n <= maxPrintedSpans; n++ {
		s := ptrace.NewSpan()
		s.SetSpanID(id(n))
		p.mark(res, s)
	}
	require.Len(t, p.process, maxPrintedSpans)

	forgotten := child(id(0))
	p.mark(res, forgotten)
	assert.Zero(t, forgotten.Flags(), "the parent printed first of all was forgotten")

	kept := child(id(maxPrintedSpans))
	p.mark(res, kept)
	assert.Equal(t, uint32(flagHasIsRemote), kept.Flags(), "the parent printed last is known, by the same process: local")

	other := pcommon.NewResource()
	other.Attributes().PutStr("service.name", "nemo-gym/policy_model")
	remote := child(id(maxPrintedSpans))
	p.mark(other, remote)
	assert.Equal(t, uint32(flagHasIsRemote|flagIsRemote), remote.Flags(), "printed by another process: remote")
}
