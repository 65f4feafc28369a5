// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestServiceNamesShown: with Show, service.name is Display and the
// resource's own service.name follows as service.name.routing; without a
// service.name, Display comes last; the zero value shows the resource as it is.
func TestServiceNamesShown(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "nemo-gym")
	res.Attributes().PutStr("service.name.override", "agent")
	assert.Equal(t, `{"attributes":{"service.name":"agent","service.name.routing":"nemo-gym","service.name.override":"agent"},"schema_url":""}`,
		string(AppendConsoleResource(nil, res, "", ServiceNames{Display: "agent", Show: true})))
	assert.Equal(t, `{"attributes":{"service.name":"nemo-gym","service.name.override":"agent"},"schema_url":""}`,
		string(AppendConsoleResource(nil, res, "", ServiceNames{})))

	bare := pcommon.NewResource()
	bare.Attributes().PutStr("service.name.override", "agent")
	assert.Equal(t, `{"attributes":{"service.name.override":"agent","service.name":"agent"},"schema_url":""}`,
		string(AppendConsoleResource(nil, bare, "", ServiceNames{Display: "agent", Show: true})))
}

// TestConsoleNamesReadBack: every kind and status code a console line
// shows reads back as itself (recovery decodes console lines).
func TestConsoleNamesReadBack(t *testing.T) {
	for _, k := range []ptrace.SpanKind{ptrace.SpanKindInternal, ptrace.SpanKindServer, ptrace.SpanKindClient, ptrace.SpanKindProducer, ptrace.SpanKindConsumer} {
		q := consoleKind(k)
		assert.Equal(t, k, SpanKindOf(q[1:len(q)-1]), q)
	}
	q := consoleKind(ptrace.SpanKindUnspecified)
	assert.Equal(t, ptrace.SpanKindInternal, SpanKindOf(q[1:len(q)-1]), "unspecified is shown as INTERNAL")
	for _, c := range []ptrace.StatusCode{ptrace.StatusCodeUnset, ptrace.StatusCodeOk, ptrace.StatusCodeError} {
		assert.Equal(t, c, StatusCodeOf(StatusName(c)))
	}
}
