// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRotationLeavesFsyncToFlush: a rotation renames the combined file
// without fsyncing it in the caller's append; the backup and the dir are
// owed to the next flush, which syncs them (one at a time below the syncfs
// threshold, or all with one syncfs above it) and owes nothing after.
func TestRotationLeavesFsyncToFlush(t *testing.T) {
	for _, tc := range []struct {
		syncfsAbove int
		wantSyncfs  int64
	}{{1000, 0}, {0, 1}} {
		t.Run(fmt.Sprint("syncfs_above_", tc.syncfsAbove), func(t *testing.T) {
			s, ev := openTest(t, 16, false)
			defer func() { require.NoError(t, s.Close()) }()
			s.syncfsAbove = tc.syncfsAbove
			rot := &Rotation{MaxBytes: 64 << 10, MaxBackups: 100}
			line := strings.Repeat("x", 1000) + "\n"
			for i := 0; i < 5; i++ {
				data := make([][]byte, 20) // ~20 KB each
				for j := range data {
					data[j] = []byte(line)
				}
				require.NoError(t, s.Append("spans.jsonl", data, len(data)*len(line), AppendOpts{Kind: "combined", Rotate: rot}))
			}
			backups := backupsOf(t, ev.dir, "spans.jsonl")
			require.NotEmpty(t, backups)
			s.mu.Lock()
			for _, b := range backups {
				assert.Contains(t, s.closedDirty, b)
			}
			assert.True(t, s.dirDirty)
			s.mu.Unlock()

			require.NoError(t, s.Flush())
			s.mu.Lock()
			assert.Empty(t, s.closedDirty)
			assert.False(t, s.dirDirty)
			s.mu.Unlock()
			assert.Equal(t, tc.wantSyncfs, s.syncfsCalls.Load())
			assert.Zero(t, ev.fsyncErr)
		})
	}
}

// TestFlushSyncfsAboveThreshold: a flush with more than syncfsThreshold
// files to sync makes one syncfs and forgets them all; with fewer, it
// fsyncs each (evicted ones reopened) and makes no syncfs.
func TestFlushSyncfsAboveThreshold(t *testing.T) {
	for _, tc := range []struct {
		files      int
		wantSyncfs int64
	}{{syncfsThreshold / 2, 0}, {syncfsThreshold * 3, 1}} {
		t.Run(fmt.Sprint(tc.files), func(t *testing.T) {
			s, ev := openTest(t, 4, false) // most files are evicted while dirty
			defer func() { require.NoError(t, s.Close()) }()
			for i := 0; i < tc.files; i++ {
				appendLine(t, s, fmt.Sprintf("r%d.spans.jsonl", i), "{}\n", AppendOpts{Kind: "rollout"})
			}
			s.mu.Lock()
			require.NotEmpty(t, s.closedDirty)
			s.mu.Unlock()

			require.NoError(t, s.Flush())
			assert.Equal(t, tc.wantSyncfs, s.syncfsCalls.Load())
			s.mu.Lock()
			assert.Empty(t, s.closedDirty)
			for n, h := range s.handles {
				assert.False(t, h.dirty, n)
			}
			s.mu.Unlock()
			assert.Zero(t, ev.fsyncErr)
		})
	}
}
