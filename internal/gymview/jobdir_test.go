// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJobDir: `otelcol-gym view JOB_DIR` shows the job's model-calls/ with
// its artifacts/ when there is one; a dir that is no job is refused with
// what to give instead.
func TestJobDir(t *testing.T) {
	job := t.TempDir()
	_, _, err := jobDir(job)
	require.ErrorContains(t, err, "no model-calls/ in it): give the capture dir with --capture-dir DIR")

	require.NoError(t, os.Mkdir(filepath.Join(job, "model-calls"), 0o750))
	dir, out, err := jobDir(job)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(job, "model-calls"), dir)
	assert.Empty(t, out)

	require.NoError(t, os.Mkdir(filepath.Join(job, "artifacts"), 0o750))
	_, out, err = jobDir(job)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(job, "artifacts"), out)
}

// TestViewCommandArguments: a job dir and --capture-dir together, two
// positional arguments, or a dir that is no job are usage errors.
func TestViewCommandArguments(t *testing.T) {
	job := t.TempDir()
	var w bytes.Buffer
	assert.Equal(t, 2, RunCommand([]string{"--capture-dir", job, job}, &w))
	assert.Contains(t, w.String(), "give a job dir or --capture-dir, not both")
	w.Reset()
	assert.Equal(t, 2, RunCommand([]string{job, job}, &w))
	assert.Contains(t, w.String(), "unexpected argument")
	w.Reset()
	assert.Equal(t, 2, RunCommand([]string{job}, &w))
	assert.Contains(t, w.String(), "is not a gym eval submit job dir")
}
