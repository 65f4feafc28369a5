// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rolloutsLine(run, id, status string, errs int, start string) string {
	return fmt.Sprintf(`{"rollout_id":%q,"run_id":%q,"trace_id":"%032x","root_span_id":"%016x","start_time":"2026-08-21T12:00:%sZ","end_time":"2026-08-21T12:00:59.000000Z","status":%q,"error_count":%d,"service_name":"nemo-gym/orchestrator","name":"HTTP POST","future_field":[1]}`+"\n",
		id, run, len(id), len(id)+len(run), start, status, errs)
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestRolloutIndexIncremental: each refresh reads only what was appended;
// a torn last line waits for its end; a replaced or truncated file is read
// again; several roots of one rollout make one row.
func TestRolloutIndexIncremental(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollouts.jsonl")
	ix := newRolloutIndex(newCaptureDir(dir), 0)
	require.NoError(t, ix.refresh())
	assert.Empty(t, ix.rows, "no file yet")

	appendFile(t, path, rolloutsLine("r1", "0-0", "OK", 0, "01.000000")+rolloutsLine("r1", "0-1", "ERROR", 2, "02.000000"))
	require.NoError(t, ix.refresh())
	require.Len(t, ix.rows, 2)
	gen := ix.gen

	line := rolloutsLine("r1", "1-0", "OK", 0, "03.000000")
	appendFile(t, path, line[:20])
	require.NoError(t, ix.refresh())
	assert.Len(t, ix.rows, 2, "a torn line is not read")
	assert.Equal(t, gen, ix.gen, "nothing changed")
	appendFile(t, path, line[20:])
	require.NoError(t, ix.refresh())
	require.Len(t, ix.rows, 3)
	assert.Equal(t, "1-0", ix.rows[2].ID)

	// A second root of 0-0, earlier and failed; the same id in another run.
	appendFile(t, path, rolloutsLine("r1", "0-0", "ERROR", 1, "00.500000")+rolloutsLine("r2", "0-0", "OK", 0, "05.000000")+"not json\n")
	require.NoError(t, ix.refresh())
	require.Len(t, ix.rows, 4)
	r := ix.byKey[rolloutKey{"r1", "0-0"}]
	assert.Equal(t, 2, r.Roots)
	assert.Equal(t, "ERROR", r.Status)
	assert.Equal(t, 1, r.Errors)
	assert.Equal(t, parseTime("2026-08-21T12:00:00.500000Z"), r.Start)
	assert.True(t, r.failed())
	assert.Len(t, ix.byRun["r1"], 3)
	assert.Len(t, ix.byRun["r2"], 1)
	assert.Equal(t, 1, ix.malformed)

	// Replaced (rename over it): read again from the start.
	tmp := filepath.Join(dir, "new")
	require.NoError(t, os.WriteFile(tmp, []byte(rolloutsLine("r3", "9-9", "OK", 0, "09.000000")), 0o600))
	require.NoError(t, os.Rename(tmp, path))
	require.NoError(t, ix.refresh())
	require.Len(t, ix.rows, 1)
	assert.Equal(t, "9-9", ix.rows[0].ID)
	assert.Equal(t, 0, ix.malformed)

	// Truncated in place.
	require.NoError(t, os.Truncate(path, 0))
	require.NoError(t, ix.refresh())
	assert.Empty(t, ix.rows)

	require.NoError(t, os.Remove(path))
	require.NoError(t, ix.refresh())
	assert.Empty(t, ix.rows)
}

func TestRolloutIndexSymlinkRefused(t *testing.T) {
	dir, _ := plantHostileDir(t)
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "rollouts.jsonl")))
	ix := newRolloutIndex(newCaptureDir(dir), 0)
	err := ix.refresh()
	assert.ErrorIs(t, err, errNotRegular)
	assert.Empty(t, ix.rows)
}
