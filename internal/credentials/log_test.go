// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestLogOncePerKeyNeverTheValue: a removal is logged once per key, with the
// key and the metric that counts it, never the value; past maxLoggedKeys
// keys, one line says that later keys are not named.
func TestLogOncePerKeyNeverTheValue(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := NewLog(zap.New(core), "otelcol_test_credentials_removed")
	td := ptrace.NewTraces()
	for range 3 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("Authorization", "Bearer very-secret")
		rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutStr("api_key", "very-secret-too")
	}
	assert.Equal(t, 6, Default().RemoveFromTraces(td, l.Removed))
	all := logs.All()
	if assert.Len(t, all, 2) {
		assert.Equal(t, "Authorization", all[0].ContextMap()["key"])
		assert.Equal(t, "api_key", all[1].ContextMap()["key"])
		assert.Equal(t, "otelcol_test_credentials_removed", all[0].ContextMap()["counted_in"])
	}
	for _, e := range all {
		assert.NotContains(t, fmt.Sprint(e.Message, e.ContextMap()), "secret")
	}

	for i := range 2 * maxLoggedKeys {
		l.Removed(fmt.Sprintf("k%d_api_key", i))
	}
	assert.Equal(t, maxLoggedKeys+1, logs.Len(), "named keys, then one line")
	assert.Contains(t, logs.All()[logs.Len()-1].Message, "no longer named")

	long := NewLog(zap.New(core), "m")
	long.Removed(strings.Repeat("x", 1000) + "_api_key")
	assert.Len(t, logs.All()[logs.Len()-1].ContextMap()["key"], maxKeyLen+3)
}
