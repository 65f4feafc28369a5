// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBaselinePipelinesNeedTheBaselineBinary: C0 and Cj0 are run by
// -baseline-collector's binary, and are refused without it.
func TestBaselinePipelinesNeedTheBaselineBinary(t *testing.T) {
	for _, p := range []string{"C0", "Cj0"} {
		_, err := parseOptions([]string{"-pipelines", "C," + p}, io.Discard)
		require.ErrorContains(t, err, "-baseline-collector", p)
		o, err := parseOptions([]string{"-pipelines", "C," + p, "-baseline-collector", "main-otelcol-gym"}, io.Discard)
		require.NoError(t, err, p)
		assert.Equal(t, "main-otelcol-gym", o.baseline)
	}
	_, err := parseOptions([]string{"-pipelines", "C,Cn"}, io.Discard)
	assert.NoError(t, err, "no baseline pipeline, no baseline binary needed")
	assert.True(t, byBaseline("C0"))
	assert.False(t, byBaseline("C"))
}
