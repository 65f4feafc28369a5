// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunCommandUsage: a user who names nothing, or a flag that does not
// exist, is told the usage (exit 2); --help is no error; a failure says
// what failed (exit 1).
func TestRunCommandUsage(t *testing.T) {
	var w bytes.Buffer
	assert.Equal(t, 2, RunCommand(nil, &w))
	assert.Contains(t, w.String(), "give the job dir or the files to replay")
	assert.Contains(t, w.String(), "Usage: otelcol-gym replay [--capture-dir DIR] PATH...")
	w.Reset()
	assert.Equal(t, 2, RunCommand([]string{"--nope"}, &w))
	w.Reset()
	assert.Equal(t, 0, RunCommand([]string{"--help"}, &w))
	w.Reset()
	assert.Equal(t, 1, RunCommand([]string{filepath.Join(t.TempDir(), "nope")}, &w))
	assert.Contains(t, w.String(), "otelcol-gym replay: ")
	assert.Contains(t, w.String(), "no such file")
}
