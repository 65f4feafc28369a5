// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/internal/timesource"
)

// TestWithTimeSource: a factory given a time source builds processors that
// read it; without one they read the wall clock.
func TestWithTimeSource(t *testing.T) {
	fake := newFakeClock()
	for name, tc := range map[string]struct {
		f    func() any
		want timesource.Source
	}{
		"given": {f: func() any { return NewFactory(WithTimeSource(fake)) }, want: fake},
		"wall":  {f: func() any { return NewFactory() }, want: timesource.Real{}},
	} {
		t.Run(name, func(t *testing.T) {
			f := tc.f().(*factory)
			p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(componentType), f.CreateDefaultConfig(), new(consumertest.TracesSink))
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.(*gymProcessor).clock)
		})
	}
}
